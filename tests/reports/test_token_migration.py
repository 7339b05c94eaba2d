"""The migration that moves share links to hashed tokens: a link shared before it keeps
opening (its token hashes to the stored value), and the token column is gone."""

from __future__ import annotations

import hashlib

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import TransactionTestCase

from sizing_site.reports.selectors import shared_configuration

BEFORE = [("reports", "0002_share_policy_names_and_restore")]
AFTER = [("reports", "0003_share_link_token_hash")]


class ShareTokenMigrationTest(TransactionTestCase):
    def test_existing_tokens_are_hashed_and_still_open_their_report(self) -> None:
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        old = executor.loader.project_state(BEFORE).apps
        org = old.get_model("tenancy", "Organization").objects.create(name="A", slug="a")
        saved = old.get_model("reports", "SavedConfiguration").all_tenants.create(
            organization=org,
            name="shared before",
            model_slug="m",
            accelerator_slug="c",
            estimator_request={},
            snapshot={},
        )
        token = "t" * 43
        old.get_model("reports", "ShareLink").all_tenants.create(
            organization=org, configuration=saved, token=token
        )

        executor = MigrationExecutor(connection)  # a fresh graph, as `migrate` has
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps
        link = new.get_model("reports", "ShareLink").all_tenants.get()
        assert link.token_hash == hashlib.sha256(token.encode()).hexdigest()
        columns = {
            c.name
            for c in connection.introspection.get_table_description(
                connection.cursor(), "reports_sharelink"
            )
        }
        assert "token" not in columns and "token_hash" in columns
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
        assert shared_configuration(token=token).name == "shared before"

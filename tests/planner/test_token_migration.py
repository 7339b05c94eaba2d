"""The migration that moves plan share links to hashed tokens (as reports 0003 did for
saved configurations): a link shared before it keeps opening (its token hashes to the
stored value), and the token column is gone."""

from __future__ import annotations

import hashlib

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import TransactionTestCase

from sizing_site.planner.services import shared_plan

BEFORE = [("planner", "0001_initial")]
AFTER = [("planner", "0002_plan_share_link_token_hash")]


class PlanShareTokenMigrationTest(TransactionTestCase):
    def test_existing_tokens_are_hashed_and_still_open_their_plan(self) -> None:
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        old = executor.loader.project_state(BEFORE).apps
        org = old.get_model("tenancy", "Organization").objects.create(name="A", slug="a")
        plan = old.get_model("planner", "SavedPlan").all_tenants.create(
            organization=org,
            name="shared before",
            inputs={"model": "qwen3-32b"},
            snapshot={"answer": {}},
        )
        tokens = ["t" * 43, "u" * 43]
        for token in tokens:
            old.get_model("planner", "PlanShareLink").all_tenants.create(
                organization=org, plan=plan, token=token
            )

        executor = MigrationExecutor(connection)  # a fresh graph, as `migrate` has
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps
        hashes = set(
            new.get_model("planner", "PlanShareLink").all_tenants.values_list(
                "token_hash", flat=True
            )
        )
        assert hashes == {hashlib.sha256(token.encode()).hexdigest() for token in tokens}
        columns = {
            c.name
            for c in connection.introspection.get_table_description(
                connection.cursor(), "planner_plansharelink"
            )
        }
        assert "token" not in columns and "token_hash" in columns
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
        for token in tokens:
            assert shared_plan(token=token).name == "shared before"

"""The migrations that move the sharing policy from reports to the sharing app: every
org's policy row keeps its values and code (its table renamed), the model's content type
moves with it (so permissions granted on it stay), and a link of an org that turned public
links off stays closed. Back again restores the old table."""

from __future__ import annotations

from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import TransactionTestCase

from sizing_site.sharing.models import SharePolicy

BEFORE = [("reports", "0003_share_link_token_hash")]
AFTER = [("sharing", "0001_initial")]


def tables() -> set[str]:
    return set(connection.introspection.table_names())


class SharePolicyMoveTest(TransactionTestCase):
    def tearDown(self) -> None:
        ContentType.objects.clear_cache()

    def test_policies_move_with_their_rows_and_content_type(self) -> None:
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        old = executor.loader.project_state(BEFORE).apps
        org = old.get_model("tenancy", "Organization").objects.create(name="A", slug="a")
        other = old.get_model("tenancy", "Organization").objects.create(name="B", slug="b")
        policy = old.get_model("reports", "SharePolicy").all_tenants.create(
            organization=org, public_links=False
        )
        # As a database from before the move has it (contenttypes is not in the migration
        # state up to BEFORE: its table is today's).
        ContentType.objects.filter(model="sharepolicy").delete()
        kind = ContentType.objects.create(app_label="reports", model="sharepolicy")
        assert "reports_sharepolicy" in tables() and "sharing_sharepolicy" not in tables()

        executor = MigrationExecutor(connection)  # a fresh graph, as `migrate` has
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps
        moved = new.get_model("sharing", "SharePolicy").all_tenants.get()
        assert (moved.organization_id, moved.code, moved.public_links) == (
            org.pk,
            policy.code,
            False,
        )
        assert "sharing_sharepolicy" in tables() and "reports_sharepolicy" not in tables()
        kind.refresh_from_db()
        assert (kind.app_label, kind.model) == ("sharing", "sharepolicy")

        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        assert "reports_sharepolicy" in tables() and "sharing_sharepolicy" not in tables()
        back = executor.loader.project_state(BEFORE).apps
        assert back.get_model("reports", "SharePolicy").all_tenants.get().code == policy.code
        kind.refresh_from_db()
        assert kind.app_label == "reports"

        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
        # The current model reads the moved row; the other org still has none (allowed).
        assert SharePolicy.all_tenants.get(organization_id=org.pk).public_links is False
        assert not SharePolicy.all_tenants.filter(organization_id=other.pk).exists()

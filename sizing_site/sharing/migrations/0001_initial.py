"""The sharing policy, moved here from reports with its rows: reports' 0004 renamed its
table to sharing_sharepolicy, so this migration only takes the model over in the state, and
moves its content type (and with it the permissions granted on it) to this app."""

import uuid

import django.db.models.deletion
import django.db.models.manager
from django.db import migrations, models


def move_content_type(apps, schema_editor, old="reports", new="sharing"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    types = ContentType.objects.using(schema_editor.connection.alias)
    if not types.filter(app_label=new, model="sharepolicy").exists():
        types.filter(app_label=old, model="sharepolicy").update(app_label=new)


def move_content_type_back(apps, schema_editor):
    move_content_type(apps, schema_editor, old="sharing", new="reports")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("reports", "0004_share_policy_to_sharing"),
        ("tenancy", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SharePolicy",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "code",
                            models.UUIDField(
                                default=uuid.uuid4,
                                editable=False,
                                unique=True,
                                verbose_name="code",
                            ),
                        ),
                        (
                            "public_links",
                            models.BooleanField(
                                default=True, verbose_name="public share links allowed"
                            ),
                        ),
                        (
                            "organization",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                to="tenancy.organization",
                                verbose_name="organization",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "share policy",
                        "verbose_name_plural": "share policies",
                        "default_manager_name": "all_tenants",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("organization",), name="one_share_policy_per_org"
                            )
                        ],
                    },
                    managers=[
                        ("all_tenants", django.db.models.manager.Manager()),
                    ],
                ),
            ],
        ),
        migrations.RunPython(move_content_type, move_content_type_back),
    ]

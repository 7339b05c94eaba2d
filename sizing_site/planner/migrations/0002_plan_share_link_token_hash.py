"""Plan share links keep the SHA-256 of their token only, as the saved configurations'
links do (reports 0003): each existing token is hashed into token_hash, then the token
column goes. Links shared before keep working (their token hashes to the stored value);
nobody can list them again."""

import hashlib

from django.db import migrations, models


def hash_tokens(apps, schema_editor):
    PlanShareLink = apps.get_model("planner", "PlanShareLink")
    for link in PlanShareLink.all_tenants.only("pk", "token").iterator():
        digest = hashlib.sha256(link.token.encode("utf-8", "surrogatepass")).hexdigest()
        PlanShareLink.all_tenants.filter(pk=link.pk).update(token_hash=digest)


class Migration(migrations.Migration):
    dependencies = [
        ("planner", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="plansharelink",
            name="token_hash",
            field=models.CharField(
                editable=False, max_length=64, null=True, verbose_name="token hash"
            ),
        ),
        # No way back: a hash cannot be turned into its token again.
        migrations.RunPython(hash_tokens, migrations.RunPython.noop, elidable=False),
        migrations.RemoveField(model_name="plansharelink", name="token"),
        migrations.AlterField(
            model_name="plansharelink",
            name="token_hash",
            field=models.CharField(
                editable=False, max_length=64, unique=True, verbose_name="token hash"
            ),
        ),
    ]

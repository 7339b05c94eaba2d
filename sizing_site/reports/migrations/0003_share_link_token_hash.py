"""Share links keep the SHA-256 of their token only: each existing token is hashed into
token_hash, then the token column goes. Links shared before keep working (their token
hashes to the stored value); nobody can list them again."""

import hashlib

from django.db import migrations, models


def hash_tokens(apps, schema_editor):
    ShareLink = apps.get_model("reports", "ShareLink")
    for link in ShareLink.all_tenants.only("pk", "token").iterator():
        digest = hashlib.sha256(link.token.encode("utf-8", "surrogatepass")).hexdigest()
        ShareLink.all_tenants.filter(pk=link.pk).update(token_hash=digest)


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0002_share_policy_names_and_restore"),
    ]

    operations = [
        migrations.AddField(
            model_name="sharelink",
            name="token_hash",
            field=models.CharField(
                editable=False, max_length=64, null=True, verbose_name="token hash"
            ),
        ),
        # No way back: a hash cannot be turned into its token again.
        migrations.RunPython(hash_tokens, migrations.RunPython.noop, elidable=False),
        migrations.RemoveField(model_name="sharelink", name="token"),
        migrations.AlterField(
            model_name="sharelink",
            name="token_hash",
            field=models.CharField(
                editable=False, max_length=64, unique=True, verbose_name="token hash"
            ),
        ),
    ]

"""The sharing policy moves to the sharing app (sizing_site.sharing), which holds what
saved configurations' and saved plans' share links have in common. Its table is renamed
with its rows; sharing's 0001_initial takes the model over in the migration state."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0003_share_link_token_hash"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AlterModelTable(name="sharepolicy", table="sharing_sharepolicy"),
            ],
            state_operations=[
                migrations.DeleteModel(name="SharePolicy"),
            ],
        ),
    ]

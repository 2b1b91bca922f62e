from django.db import migrations

from synthorg.db.append_only import AppendOnly


class Migration(migrations.Migration):
    dependencies = [("persistence", "0003_operational_data")]

    operations = [AppendOnly("persistence_costrecord")]

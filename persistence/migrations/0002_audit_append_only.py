from django.db import migrations

from synthorg.db.append_only import AppendOnly


class Migration(migrations.Migration):
    dependencies = [("persistence", "0001_initial")]

    operations = [AppendOnly("persistence_auditentry")]

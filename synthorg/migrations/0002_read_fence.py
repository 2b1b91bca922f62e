"""The read-your-writes fences of ``synthorg.db.replicas``: one row per principal.

UNLOGGED: written on every request that wrote, read only on the primary (a standby cannot
read an unlogged table, so a fence can never be looked up on a replica by mistake).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("synthorg", "0001_vector_extension")]
    operations = [
        migrations.RunSQL(
            "CREATE UNLOGGED TABLE synthorg_read_fence ("
            " principal varchar(80) PRIMARY KEY,"
            " lsn bigint NOT NULL CHECK (lsn >= 0),"
            " written_at timestamptz NOT NULL)",
            "DROP TABLE synthorg_read_fence",
        )
    ]

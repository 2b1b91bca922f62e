from django.db import migrations

from synthorg.db.append_only import AppendOnly

# search_vector and doc_length of each log row are derived by the database on INSERT (the
# only write the log accepts), so every past version stays searchable for time travel.
INSTALL_SEARCH = """
CREATE OR REPLACE FUNCTION orgmemory_log_search_fields() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_vector := to_tsvector('english'::regconfig, coalesce(NEW.content, ''));
    NEW.doc_length := coalesce(
        (SELECT sum(coalesce(array_length(t.positions, 1), 1))
           FROM unnest(NEW.search_vector) AS t),
        0
    );
    RETURN NEW;
END;
$$;
DROP TRIGGER IF EXISTS orgmemory_log_search_fields ON orgmemory_operationlogentry;
CREATE TRIGGER orgmemory_log_search_fields
    BEFORE INSERT ON orgmemory_operationlogentry
    FOR EACH ROW EXECUTE FUNCTION orgmemory_log_search_fields();
"""

REMOVE_SEARCH = """
DROP TRIGGER IF EXISTS orgmemory_log_search_fields ON orgmemory_operationlogentry;
DROP FUNCTION IF EXISTS orgmemory_log_search_fields();
"""


class Migration(migrations.Migration):
    dependencies = [("orgmemory", "0001_operation_log")]

    operations = [
        migrations.RunSQL(sql=INSTALL_SEARCH, reverse_sql=REMOVE_SEARCH),
        AppendOnly("orgmemory_operationlogentry"),
    ]

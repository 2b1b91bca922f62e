from django.db import migrations

# search_vector and doc_length are derived from content + context by the database itself,
# so every writer (ORM, bulk insert, raw SQL) keeps the sparse index consistent.
INSTALL = """
CREATE OR REPLACE FUNCTION memory_memory_search_fields() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_vector := to_tsvector(
        'english'::regconfig, coalesce(NEW.content, '') || ' ' || coalesce(NEW.context, '')
    );
    NEW.doc_length := coalesce(
        (SELECT sum(coalesce(array_length(t.positions, 1), 1))
           FROM unnest(NEW.search_vector) AS t),
        0
    );
    RETURN NEW;
END;
$$;
DROP TRIGGER IF EXISTS memory_memory_search_fields ON memory_memory;
CREATE TRIGGER memory_memory_search_fields
    BEFORE INSERT OR UPDATE OF content, context ON memory_memory
    FOR EACH ROW EXECUTE FUNCTION memory_memory_search_fields();
"""

REMOVE = """
DROP TRIGGER IF EXISTS memory_memory_search_fields ON memory_memory;
DROP FUNCTION IF EXISTS memory_memory_search_fields();
"""


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [migrations.RunSQL(sql=INSTALL, reverse_sql=REMOVE)]

"""``flush`` as the schema owner, append-only tables included.

Emptying every table is schema-owner work: the app role has no TRUNCATE privilege. The
append-only tables' TRUNCATE triggers are disabled for the flush's own transaction only
(an owner's right on its tables), so ``flush`` — and the test runner's flush after
``transaction=True`` tests — can empty them while the app role never can.
"""

from django.core.management.commands.flush import Command as DjangoFlushCommand
from django.db import transaction
from psycopg import sql

from synthorg.db.roles import owner_connection, truncate_guards


class Command(DjangoFlushCommand):
    help = DjangoFlushCommand.help + " Runs as the owner role (DATABASE_OWNER)."

    def handle(self, **options):
        alias = options["database"]
        with owner_connection(alias) as connection, transaction.atomic(using=alias):
            guards = truncate_guards(connection)
            self._set_truncate_triggers(connection, guards, enable=False)
            super().handle(**options)
            self._set_truncate_triggers(connection, guards, enable=True)

    @staticmethod
    def _set_truncate_triggers(connection, guards, *, enable):
        action = sql.SQL("ENABLE" if enable else "DISABLE")
        with connection.cursor() as cursor:
            for table, trigger in guards:
                statement = sql.SQL("ALTER TABLE {} {} TRIGGER {}").format(
                    sql.Identifier(table), action, sql.Identifier(trigger)
                )
                cursor.execute(statement.as_string(cursor.connection))

"""``migrate`` as the schema owner, then row privileges for the app role.

Overrides Django's command (project apps' commands take precedence): the ``default``
connection logs in as ``settings.DATABASE_OWNER`` for the run, so the tables belong to the
owner, and the app role (``DATABASES["default"]``) gets SELECT/INSERT/UPDATE/DELETE on them
— minus UPDATE/DELETE on append-only tables — and nothing else.
"""

from django.core.management.commands.migrate import Command as DjangoMigrateCommand

from synthorg.db.roles import app_role, grant_app_privileges, owner_connection


class Command(DjangoMigrateCommand):
    help = DjangoMigrateCommand.help + " Runs as the owner role (DATABASE_OWNER)."

    def handle(self, *args, **options):
        alias = options["database"]
        app = app_role(alias)
        with owner_connection(alias) as connection:
            super().handle(*args, **options)
            if app is not None:
                grant_app_privileges(connection, app=app, owner=connection.settings_dict["USER"])
                if options["verbosity"] >= 1:
                    self.stdout.write(f"Granted row privileges to the app role {app!r}.")

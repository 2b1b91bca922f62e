#!/usr/bin/env python
"""Django's command-line utility, with plain-language database errors."""

import os
import sys
import warnings


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg.settings")
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers); harmless here.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    from django.core.management import execute_from_command_line
    from django.db.utils import OperationalError, ProgrammingError

    from synthorg.database import DatabaseUnavailableError

    try:
        execute_from_command_line(sys.argv)
    except DatabaseUnavailableError as exc:
        sys.exit(f"error: database unavailable: {exc}")
    except OperationalError as exc:
        sys.exit(
            "error: cannot reach the database. Check DATABASE_URL (or unset it to use the "
            f"embedded PostgreSQL under var/pgdata).\n  {str(exc).strip()}"
        )
    except ProgrammingError as exc:
        if "vector" in str(exc):
            sys.exit(
                "error: the PostgreSQL `vector` extension (pgvector) is missing or cannot be "
                "created. Install pgvector on the server (or use the embedded database).\n"
                f"  {str(exc).strip()}"
            )
        raise


if __name__ == "__main__":
    main()

"""Adding and removing a database alias at run time (a replica alias in the replica tests).

``connections`` caches one connection wrapper per alias and thread: a wrapper made for an
earlier alias of the same name would keep that alias's settings (its server) after the
settings change. Both helpers drop it, so each test module's alias means what it set.
"""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import connections
from django.utils.connection import ConnectionDoesNotExist


def _forget_wrapper(alias: str) -> None:
    try:
        connections[alias].close()  # the cached wrapper, or a new one for a known alias
    except ConnectionDoesNotExist:  # neither cached nor configured: nothing to forget
        return
    del connections[alias]


def add_database_alias(alias: str, config: dict) -> None:
    _forget_wrapper(alias)
    connections.settings[alias] = config
    django_settings.DATABASES[alias] = config


def remove_database_alias(alias: str) -> None:
    _forget_wrapper(alias)
    django_settings.DATABASES.pop(alias, None)
    connections.settings.pop(alias, None)

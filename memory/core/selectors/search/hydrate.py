"""Loading the rows a search returns (every column but the vectors)."""

from __future__ import annotations

from collections.abc import Sequence

from memory.core.models.memory import Memory
from synthorg.db.prepared import execute_prepared
from synthorg.db.replicas import read_connection

#: What a hit carries: every column but the vectors (loaded as deferred fields).
_HYDRATED_FIELDS = tuple(
    f for f in Memory._meta.concrete_fields if f.attname not in ("embedding", "search_vector")
)
_HYDRATE_SQL = "SELECT {} FROM memory_memory m WHERE m.id = ANY(%s)".format(
    ", ".join(f'm."{f.column}"' for f in _HYDRATED_FIELDS)
)


def hydrate(ids: Sequence) -> dict:
    """``id → Memory`` (as ``defer("embedding", "search_vector").in_bulk``, without the
    queryset machinery, which is faster; measured:
    docs/benchmarks/latency.md#smaller-levers-in-the-search-path), as a prepared statement
    of the connection (:mod:`synthorg.db.prepared`)."""
    if not ids:
        return {}
    connection = read_connection()  # a replica inside a replica read (synthorg.db.replicas)
    names = [f.attname for f in _HYDRATED_FIELDS]
    converters = [
        (i, f.get_db_converters(connection))
        for i, f in enumerate(_HYDRATED_FIELDS)
        if f.get_db_converters(connection)
    ]
    rows = execute_prepared(connection, _HYDRATE_SQL, [list(ids)])
    memories = {}
    for row in rows:
        values = list(row)
        for i, funcs in converters:
            for func in funcs:
                values[i] = func(values[i], None, connection)
        memory = Memory.from_db(connection.alias, names, values)
        memories[memory.pk] = memory
    return memories

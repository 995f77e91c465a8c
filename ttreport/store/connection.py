"""Connecting to a store: its URL, its tensor store, and its schema (created on first use).

A store URL is libpq's (`postgresql://[user[:password]@]host[:port]/dbname?...`), plus one parameter
of ttreport's own, `tensors=/path`: the tensor store, a directory every host that pushes or reads
mounts (else $TTREPORT_TENSOR_STORE). Credentials are libpq's business: the URL, PG* environment
variables (PGPASSWORD, PGUSER, ...) or ~/.pgpass; ttreport writes them nowhere, and shows a URL
with its password hidden.

    >>> split_url("postgresql://ci@db/ttreport?tensors=/mnt/t&connect_timeout=5")
    ('postgresql://ci@db/ttreport?connect_timeout=5', '/mnt/t')
"""

from __future__ import annotations

import functools
import os
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ttreport.errors import TTReportError

SCHEMES = ("postgresql://", "postgres://")
TENSOR_STORE_ENV = "TTREPORT_TENSOR_STORE"


class StoreError(TTReportError):
    """A store cannot be reached, read or written as asked; the message says what to do."""


def is_store_url(text) -> bool:
    return isinstance(text, str) and text.startswith(SCHEMES)


def split_url(url: str) -> tuple[str, str | None]:
    """(the URL libpq gets, the tensor store directory or None)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    tensors = next((v for k, v in query if k == "tensors"), None)
    rest = urlencode([(k, v) for k, v in query if k != "tensors"])
    return urlunsplit(parts._replace(query=rest)), tensors or os.environ.get(TENSOR_STORE_ENV) or None


def shown(url: str) -> str:
    """The URL with its password replaced by ***, for messages."""
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)


def connect(url: str):
    """A psycopg connection to the store at `url` (autocommit off: the caller commits)."""
    try:
        import psycopg
    except ImportError:
        raise StoreError("the store needs psycopg: pip install 'psycopg[binary]' (or pip install 'ttreport[store]')") \
            from None
    conninfo, _ = split_url(url)
    try:
        return psycopg.connect(conninfo)
    except psycopg.Error as e:
        raise StoreError(f"cannot connect to the store {shown(url)}: {str(e).strip()}; check the URL, and that the "
                         f"password is in the URL, PGPASSWORD or ~/.pgpass") from None


@functools.cache
def _ddl() -> list[str]:
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.schema import CreateIndex, CreateTable

    from ttreport.store import tables

    dialect = postgresql.dialect()
    out = []
    for t in tables.store_metadata.sorted_tables:
        out.append(str(CreateTable(t, if_not_exists=True).compile(dialect=dialect)))
        out += [str(CreateIndex(i, if_not_exists=True).compile(dialect=dialect)) for i in t.indexes]
    return out


def ensure_schema(conn) -> None:
    """Create the store's tables if they are missing; bring a store of an older revision to this one (its new
    tables and columns); refuse one of a newer revision. Several processes may find an empty or older
    store at once: an advisory lock lets one change it."""
    from ttreport import db
    from ttreport.store.tables import VERSION_KEY

    head = db.head_revision()
    import psycopg

    try:  # the usual case, one round trip: the store is there, at this ttreport's revision
        row = conn.execute("SELECT value FROM store_meta WHERE key = %s", (VERSION_KEY,)).fetchone()
    except psycopg.errors.UndefinedTable:
        row = None
    conn.rollback()  # end the check's transaction: the caller's next one may be READ ONLY
    if row and row[0] == head:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('ttreport.store.schema'))")
        exists = conn.execute("SELECT to_regclass('store_meta') IS NOT NULL").fetchone()[0]
        if exists:
            row = conn.execute("SELECT value FROM store_meta WHERE key = %s", (VERSION_KEY,)).fetchone()
            if row and row[0] == head:
                return
            if row and row[0] not in db.known_revisions():
                raise StoreError(f"the store holds schema revision {row[0]}, which this ttreport does not know "
                                 f"(it writes {head}): upgrade ttreport")
        for ddl in _ddl():  # on an older store: the tables a later migration added
            conn.execute(ddl)
        if exists and row:
            _add_columns(conn, row[0], head)
        conn.execute("INSERT INTO store_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                     "SET value = EXCLUDED.value", (VERSION_KEY, head))


def _add_columns(conn, revision: str, head: str) -> None:
    """Bring a store made by an older ttreport to `head`: the columns later migrations added to the report's
    tables, added to the store's. A migration that dropped or renamed a column cannot be applied so: refused."""
    from sqlalchemy.dialects import postgresql

    from ttreport.store import tables

    have: dict[str, set[str]] = {}
    for table, column in conn.execute("SELECT table_name, column_name FROM information_schema.columns "
                                      "WHERE table_schema = current_schema()"):
        have.setdefault(table, set()).add(column)
    for table in tables.store_metadata.sorted_tables:
        present = have.get(table.name, set())
        gone = present - {c.name for c in table.columns}
        if gone:
            raise StoreError(f"the store holds schema revision {revision} and its {table.name} has column(s) "
                             f"{', '.join(sorted(gone))} that this ttreport's schema ({head}) lacks; such a store "
                             f"cannot be upgraded in place: push into a new database")
        for c in table.columns:
            if present and c.name not in present:
                kind = c.type.compile(dialect=postgresql.dialect())
                conn.execute(f'ALTER TABLE {table.name} ADD COLUMN "{c.name}" {kind}')

"""Connecting to a store: its URL, its tensor store, and its schema (created on first use).

A store URL is libpq's (`postgresql://[user[:password]@]host[:port]/dbname?...`, or its key=value
form, `host=db dbname=ttreport`), plus one parameter of ttreport's own, `tensors=/path`: the tensor
store, a directory every host that pushes or reads mounts (else $TTREPORT_TENSOR_STORE). Credentials
are libpq's business: the URL, PG* environment variables (PGPASSWORD, PGUSER, ...) or ~/.pgpass;
ttreport writes them nowhere, and every message shows a URL through shown() (its password hidden,
in each form libpq reads one) and libpq's own words through masked() (which may quote the URL).

    >>> split_url("postgresql://ci@db/ttreport?tensors=/mnt/t&connect_timeout=5")
    ('postgresql://ci@db/ttreport?connect_timeout=5', '/mnt/t')
    >>> shown("host=db password='pw 1' dbname=tt")
    'host=db password=*** dbname=tt'
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from urllib.parse import unquote, urlsplit, urlunsplit

from ttreport import db
from ttreport.errors import TTReportError

SCHEMES = ("postgresql://", "postgres://")
TENSOR_STORE_ENV = "TTREPORT_TENSOR_STORE"
# The alembic revision of the report schema a store holds (kept in store_meta). Here, not in tables.py, which
# imports SQLAlchemy (~0.14 s): `ttreport runs` and `history` read it on every connection and need no table.
VERSION_KEY = "schema_revision"


class StoreError(TTReportError):
    """A store cannot be reached, read or written as asked; the message says what to do."""


_URL_FORM = "postgresql://[user@]host[:port]/dbname[?tensors=DIR] (an IPv6 host in brackets: [::1])"
SECRET_KEYS = frozenset({"password", "sslpassword"})  # libpq's keywords whose values are secrets
# A key=value pair of libpq's DSN form: a value that starts with ' runs to the next unescaped ' (an
# unterminated one to the end: libpq refuses it, and it is masked all the same); else to the next blank,
# a backslash escaping the character after it, a quote inside taken as it is (as libpq reads it).
_PAIR = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*('(?:[^'\\]|\\.)*'?|(?:[^\s\\]|\\.)*)", re.S)
# What a DSN starts with, so that a folder named `a=b` is still a folder: libpq's usual keywords.
_DSN_START = re.compile(r"\s*(?:host|hostaddr|port|dbname|user|password|passfile|service|sslmode)\s*=")


def is_store_url(text) -> bool:
    """A postgresql:// URL, or a libpq key=value DSN (`host=db dbname=ttreport`)."""
    return isinstance(text, str) and (text.startswith(SCHEMES) or _DSN_START.match(text) is not None)


def _unquote_dsn(value: str) -> str:
    """A DSN value as libpq reads it: its quotes off, each backslash escape taken."""
    inner = value[1:-1] if len(value) > 1 and value[0] == value[-1] == "'" else value.lstrip("'")
    return re.sub(r"\\(.)", r"\1", inner, flags=re.S)


def _netloc(url: str) -> tuple[int, int]:
    """Where the URL's userinfo@host part starts and ends. libpq looks for the user's `@` up to the first
    `/`; Python's urlsplit, up to `/`, `?` or `#`, at the last `@`: this takes the widest of the two."""
    start = url.index("://") + 3
    slash = url.find("/", start)
    return start, len(url) if slash < 0 else slash


def _query_secrets(query: str) -> list[tuple[int, int]]:
    """(start, end) in `query` of each secret parameter's value; libpq decodes a parameter's name too."""
    spans, at = [], 0
    for piece in query.split("&"):
        key, eq, _ = piece.partition("=")
        if eq and unquote(key).strip().lower() in SECRET_KEYS:
            spans.append((at + len(key) + 1, at + len(piece)))
        at += len(piece) + 1
    return spans


def shown(url: str) -> str:
    """`url` (a URL or DSN, well formed or not) with every password replaced by ***, for messages."""
    if not url.startswith(SCHEMES):
        out, at = [], 0
        for m in _PAIR.finditer(url):
            if m.group(1).lower() in SECRET_KEYS:
                out += [url[at:m.start(2)], "***"]
                at = m.end(2)
        return "".join(out) + url[at:]
    start, end = _netloc(url)
    user, at, host = url[start:end].rpartition("@")
    if at and ":" in user:
        url = url[:start] + user.split(":", 1)[0] + ":***@" + host + url[end:]
    q = url.find("?")
    if q < 0:
        return url
    query = url[q + 1:]
    for a, b in reversed(_query_secrets(query)):
        query = query[:a] + "***" + query[b:]
    return url[:q + 1] + query


def secrets(url: str) -> set[str]:
    """Each secret written in `url`, as written and as libpq decodes it (either may be quoted back)."""
    found = set()
    if not url.startswith(SCHEMES):
        for m in _PAIR.finditer(url):
            if m.group(1).lower() in SECRET_KEYS:
                found |= {m.group(2), _unquote_dsn(m.group(2))}
        return found - {""}
    start, end = _netloc(url)
    user, at, _ = url[start:end].rpartition("@")
    if at and ":" in user:
        found.add(user.split(":", 1)[1])
    # The query starts at the first `?` (Python's reading) or the first after the user's `@` (libpq's).
    for q in {url.find("?"), url.find("?", start + len(user) + len(at))} - {-1}:
        found |= {url[q + 1:][a:b] for a, b in _query_secrets(url[q + 1:])}
    return (found | {unquote(s) for s in found}) - {""}


def masked(text: str, url: str) -> str:
    """`text` (an error message, perhaps libpq's, which can quote the URL or a piece of it) without any
    secret of `url` in it."""
    for secret in sorted(secrets(url), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def split_url(url: str) -> tuple[str, str | None]:
    """(the URL or DSN libpq gets, the tensor store directory or None). The other parameters go to libpq as
    they were written (not decoded and encoded again, which would change a password holding `%20`)."""
    if not url.startswith(SCHEMES):
        found = [m for m in _PAIR.finditer(url) if m.group(1) == "tensors"]
        for m in reversed(found):  # the rest as written, even where libpq will refuse it
            url = url[:m.start()] + url[m.end():]
        tensors = _unquote_dsn(found[-1].group(2)) if found else None
        return url.strip(), tensors or os.environ.get(TENSOR_STORE_ENV) or None
    try:
        parts = urlsplit(url)
    except ValueError as e:  # an unclosed [ (IPv6 host), a host in brackets that is no address
        raise StoreError(f"{shown(url)!r} is not a store URL ({masked(str(e), url)}): write it as "
                         f"{_URL_FORM}") from None
    tensors, rest = None, []
    for piece in parts.query.split("&") if parts.query else []:
        key, _, value = piece.partition("=")
        if unquote(key) == "tensors":
            tensors = unquote(value)
        else:
            rest.append(piece)
    return urlunsplit(parts._replace(query="&".join(rest))), tensors or os.environ.get(TENSOR_STORE_ENV) or None


@contextlib.contextmanager
def talking_to(url: str):
    """Turn an error of the store's server or of psycopg into a StoreError naming the store (its secrets
    hidden), so that the CLI says it in one line."""
    import psycopg

    try:
        yield
    except psycopg.Error as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise StoreError(f"the store {shown(url)} failed: {masked(first, url)}; try again, and if it persists, "
                         f"see the server's log") from None


def connect(url: str):
    """A psycopg connection to the store at `url` (autocommit off: the caller commits)."""
    _refuse_a_path(url)
    try:
        import psycopg
    except ImportError:
        raise StoreError("the store needs psycopg: pip install 'psycopg[binary]' (or pip install 'ttreport[store]')") \
            from None
    conninfo, _ = split_url(url)
    try:
        return psycopg.connect(conninfo)
    except psycopg.Error as e:
        said = masked(str(e).strip(), url)
        raise StoreError(f"cannot connect to the store {shown(url)}: {said}; check the URL, and that the "
                         f"password is in the URL, PGPASSWORD or ~/.pgpass") from None


def _refuse_a_path(url: str) -> None:
    """Refuse what is neither a URL nor a key=value DSN (libpq reads every DSN pair with its `=`; "" is libpq's own
    default connection, kept): a report folder or a file given where a store is expected. libpq said
    `missing "=" after "sample_reports/demo" in connection info string`, which names no fix."""
    if not url or is_store_url(url) or "=" in url:
        return
    if os.path.isdir(url):
        hint = (f"it is a folder: to read one report, `ttreport summary {url}` (or `ttreport ops {url} --name OP` "
                f"for one op's calls); a store's URL is {_URL_FORM}")
    elif os.path.lexists(url):
        hint = f"it is a file; a store's URL is {_URL_FORM}"
    else:
        hint = f"write it as {_URL_FORM}"
    raise StoreError(f"{shown(url)!r} is not a store URL: {hint}")


@contextlib.contextmanager
def reading(url: str):
    """A connection to the store at `url` inside a read-only transaction (its schema made or brought up to date
    first), closed after; the server's errors as one-line StoreErrors (talking_to)."""
    with talking_to(url):
        conn = connect(url)
        try:
            ensure_schema(conn)
            with conn.transaction():
                conn.execute("SET TRANSACTION READ ONLY")
                yield conn
        finally:
            conn.close()


@functools.cache
def _ddl() -> list[str]:
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.schema import CreateIndex, CreateTable

    from ttreport.store import tables  # SQLAlchemy: only a store's schema change needs its tables

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
    import psycopg  # optional: only the store's commands need it

    head = db.head_revision()

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

    from ttreport.store import tables  # SQLAlchemy: only a store's schema change needs its tables

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

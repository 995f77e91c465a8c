"""`ttreport query URL SQL` (no --run): SQL across every run of the store, in a read-only transaction.

Each report table has a run_id column (join `runs` for names); :name placeholders take -p values
as in a report's query. The server refuses any write (SET TRANSACTION READ ONLY), and the
statement is stopped after `timeout_s` (statement_timeout).

    columns, rows = query(url, "SELECT r.name, COUNT(*) FROM operations o JOIN runs r USING (run_id) "
                               "GROUP BY r.name")
"""

from __future__ import annotations

import re

from ttreport.store.connection import StoreError, connect, ensure_schema, masked, talking_to

# :name, but not PostgreSQL's ::cast
_PLACEHOLDER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def query(url: str, sql: str, params: dict | None = None, *, timeout_s: float = 300.0):
    """(column names, an iterator of rows) for `sql` over the store at `url`; the rows stream from the server."""
    import psycopg

    if params:
        sql = _PLACEHOLDER.sub(lambda m: f"%({m.group(1)})s", sql.replace("%", "%%"))
    conn = connect(url)
    try:
        with talking_to(url):
            ensure_schema(conn)
        conn.execute("BEGIN READ ONLY")
        conn.execute(f"SET LOCAL statement_timeout = {int(timeout_s * 1000)}")
        cur = conn.cursor()
        stream = cur.stream(sql, params or None)  # single-row mode: rows arrive as the server makes them
        first = next(stream, None)
        columns = [d.name for d in cur.description or []]
    except psycopg.Error as e:
        conn.close()
        raise StoreError(f"SQL error from the store: {masked(str(e).strip().splitlines()[0], url)}") from None
    except BaseException:
        conn.close()
        raise

    def rows():
        try:
            if first is not None:
                yield first
                yield from stream
        except psycopg.Error as e:
            raise StoreError(f"SQL error from the store: {masked(str(e).strip().splitlines()[0], url)}") from None
        finally:
            conn.close()

    return columns, rows()

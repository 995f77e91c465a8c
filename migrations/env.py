"""alembic environment for report databases: always run in-process on a passed connection.

ttreport.db.upgrade() passes the connection through `config.attributes`; there is no
alembic.ini, no URL, and no logging setup, so the host program's logging is left alone.
"""

from alembic import context

from ttreport.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("report migrations run through ttreport.db.upgrade(path), which passes a connection")

# render_as_batch: SQLite alters most tables only by copying them, which batch mode does.
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()

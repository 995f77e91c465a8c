"""alembic migrations of the report schema (shipped as ttreport.migrations)."""

"""Compact tensors and arguments behind TT-NN views; indexes for peak L1 and a name's slowest ops.

Revision ID: 0003
Revises: 0002
Create Date: 2025-01-03

`tensors` becomes a view over `tensor_records` (one short row per tensor) and `tensor_specs`
(shape, dtype, layout, memory config: stored once per distinct combination). Arguments move
into `operations.arguments` as one JSON object per op, and `operation_arguments` becomes a
view that spreads it; old argument texts are kept as they were, in their order. Together they
took about 440 of a new report's 720 bytes per op.

`ix_operations_l1_bytes` becomes DESC: ordered by (l1_bytes DESC, rowid), it answers
"ORDER BY l1_bytes DESC, operation_id LIMIT 1" from its first entry, where the ascending
one made SQLite sort every op of the peak value. `ix_operations_name_duration` gives one
op name's slowest ops without sorting that name's ops.

Frozen like 0001: the DDL is written here, not read from ttreport.schema.
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_TENSOR_TEXT = """'ttnn.Tensor(id=' || r.tensor_id || ', shape=' || COALESCE(s.shape, 'None') || ', dtype=' || s.dtype
            || ', layout=' || s.layout || ', ' || COALESCE(s.placement, s.memory_config, 'host') || ')'"""

VIEWS = {
    "tensors": """
        SELECT r.tensor_id AS tensor_id,
               (SELECT shape FROM tensor_specs WHERE spec_id = r.spec_id) AS shape,
               (SELECT dtype FROM tensor_specs WHERE spec_id = r.spec_id) AS dtype,
               (SELECT layout FROM tensor_specs WHERE spec_id = r.spec_id) AS layout,
               (SELECT memory_config FROM tensor_specs WHERE spec_id = r.spec_id) AS memory_config,
               r.device_id AS device_id, r.address AS address, r.buffer_type AS buffer_type, r.size AS size,
               r.memory_config_source AS memory_config_source, r.producer_operation_id AS producer_operation_id,
               r.file AS file,
               (SELECT padded_shape FROM tensor_specs WHERE spec_id = r.spec_id) AS padded_shape
        FROM tensor_records r""",
    "operation_arguments": f"""
        SELECT o.operation_id AS operation_id, CAST(j.key AS TEXT) AS name,
               CASE j.type WHEN 'integer' THEN COALESCE(
                   (SELECT {_TENSOR_TEXT}
                    FROM tensor_records r LEFT JOIN tensor_specs s ON s.spec_id = r.spec_id
                    WHERE r.tensor_id = j.value),
                   'ttnn.Tensor(id=' || j.value || ')')
               ELSE j.value END AS value
        FROM operations o, json_each(o.arguments) j""",
}

TRIGGERS = {
    "operation_arguments_insert": """
        INSTEAD OF INSERT ON operation_arguments BEGIN
            SELECT RAISE(ABORT, 'insert the operations row before its arguments')
            WHERE NOT EXISTS (SELECT 1 FROM operations WHERE operation_id = NEW.operation_id);
            UPDATE operations SET arguments = json_insert(COALESCE(arguments, '{}'), '$.' || json_quote(NEW.name),
                                                          CAST(NEW.value AS TEXT))
            WHERE operation_id = NEW.operation_id;
        END""",
    "tensors_insert": """
        INSTEAD OF INSERT ON tensors BEGIN
            INSERT INTO tensor_specs (spec_id, shape, dtype, layout, memory_config, padded_shape)
            SELECT (SELECT MIN(COALESCE(MIN(spec_id), 0), 0) - 1 FROM tensor_specs), NEW.shape, NEW.dtype, NEW.layout,
                   NEW.memory_config, NEW.padded_shape
            WHERE NOT EXISTS (SELECT 1 FROM tensor_specs WHERE shape IS NEW.shape AND dtype IS NEW.dtype
                               AND layout IS NEW.layout AND memory_config IS NEW.memory_config
                               AND padded_shape IS NEW.padded_shape AND placement IS NULL);
            INSERT INTO tensor_records (tensor_id, spec_id, device_id, address, buffer_type, size,
                                        memory_config_source, producer_operation_id, file)
            VALUES (NEW.tensor_id, (SELECT spec_id FROM tensor_specs WHERE shape IS NEW.shape AND dtype IS NEW.dtype
                                    AND layout IS NEW.layout AND memory_config IS NEW.memory_config
                                    AND padded_shape IS NEW.padded_shape AND placement IS NULL),
                    NEW.device_id, NEW.address, NEW.buffer_type, NEW.size, NEW.memory_config_source,
                    NEW.producer_operation_id, NEW.file);
        END""",
    "tensors_update_file": """
        INSTEAD OF UPDATE OF file ON tensors BEGIN
            UPDATE tensor_records SET file = NEW.file WHERE tensor_id = OLD.tensor_id;
        END""",
}

_SPEC_COLUMNS = "shape, dtype, layout, memory_config, padded_shape"


def upgrade() -> None:
    op.add_column("operations", sa.Column("arguments", sa.Text))
    # json_group_object keeps the order of its input: each op's arguments in the order they were written.
    op.execute("""
        UPDATE operations SET arguments = (
            SELECT json_group_object(name, value) FROM (
                SELECT name, value FROM operation_arguments a
                WHERE a.operation_id = operations.operation_id ORDER BY a.rowid))
        WHERE operation_id IN (SELECT operation_id FROM operation_arguments)""")
    op.drop_table("operation_arguments")

    op.create_table(
        "tensor_specs", sa.Column("spec_id", sa.Integer, primary_key=True, autoincrement=False),
        *[sa.Column(c, sa.Text) for c in ("shape", "dtype", "layout", "memory_config", "padded_shape", "placement")],
    )
    op.create_table(
        "tensor_records", sa.Column("tensor_id", sa.Integer, primary_key=True, autoincrement=False),
        *[sa.Column(c, sa.Integer) for c in ("spec_id", "device_id", "address", "buffer_type", "size")],
        sa.Column("memory_config_source", sa.Text), sa.Column("producer_operation_id", sa.Integer),
        sa.Column("file", sa.Text),
    )
    op.execute(f"""
        INSERT INTO tensor_specs (spec_id, {_SPEC_COLUMNS})
        SELECT ROW_NUMBER() OVER (ORDER BY MIN(tensor_id)), {_SPEC_COLUMNS} FROM tensors GROUP BY {_SPEC_COLUMNS}""")
    # Each tensor finds its spec through an index: without it, a report whose tensors have many
    # distinct specs upgraded in quadratic time.
    op.execute(f"CREATE INDEX ix_upgrade_specs ON tensor_specs ({_SPEC_COLUMNS})")
    op.execute("""
        INSERT INTO tensor_records (tensor_id, spec_id, device_id, address, buffer_type, size, memory_config_source,
                                    producer_operation_id, file)
        SELECT t.tensor_id, (SELECT s.spec_id FROM tensor_specs s
                             WHERE s.shape IS t.shape AND s.dtype IS t.dtype AND s.layout IS t.layout
                               AND s.memory_config IS t.memory_config AND s.padded_shape IS t.padded_shape),
               t.device_id, t.address, t.buffer_type, t.size, t.memory_config_source, t.producer_operation_id, t.file
        FROM tensors t""")
    op.execute("DROP INDEX ix_upgrade_specs")
    op.drop_table("tensors")  # its index ix_tensors_producer goes with it, and is made again on tensor_records
    op.execute("CREATE INDEX ix_tensors_producer ON tensor_records (producer_operation_id)")

    op.execute("DROP INDEX IF EXISTS ix_operations_l1_bytes")
    op.execute("CREATE INDEX ix_operations_l1_bytes ON operations (l1_bytes DESC)")
    op.execute("CREATE INDEX ix_operations_name_duration ON operations (name, duration)")
    for name, sql in VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {sql}")
    for name, sql in TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {sql}")


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")

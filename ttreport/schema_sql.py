"""The report schema as SQL: the statements that `schema.metadata.create_all` and alembic's stamp run
on an empty database, which db.create runs itself (in one transaction; SQLAlchemy and alembic took
~0.6 s of a capture's start). Generated from ttreport/schema.py; do not edit:

    .venv/bin/python -m ttreport.db > ttreport/schema_sql.py

tests/test_schema_sql.py fails while this differs from what schema.py's metadata makes.
"""

# Tables, views and triggers, in create_all's order; alembic's version table last.
TABLES = [
    (
        'CREATE TABLE IF NOT EXISTS operations (\n'
        '\toperation_id INTEGER NOT NULL, \n'
        '\tname TEXT, \n'
        '\tduration FLOAT, \n'
        '\tstart_ns INTEGER, \n'
        '\tend_ns INTEGER, \n'
        '\tparent_operation_id INTEGER, \n'
        '\tdepth INTEGER, \n'
        '\tstatus TEXT, \n'
        '\tthread TEXT, \n'
        '\tstack_trace_id INTEGER, \n'
        '\tend_seq INTEGER, \n'
        '\tl1_bytes INTEGER, \n'
        '\tdram_bytes INTEGER, \n'
        '\targuments TEXT, \n'
        "\trank INTEGER DEFAULT '0', \n"
        '\tstep INTEGER, \n'
        '\tPRIMARY KEY (operation_id)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS operation_arguments (\n'
        '\toperation_id INTEGER, \n'
        '\tname TEXT, \n'
        '\tvalue TEXT, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS tensor_specs (\n'
        '\tspec_id INTEGER NOT NULL, \n'
        '\tshape TEXT, \n'
        '\tdtype TEXT, \n'
        '\tlayout TEXT, \n'
        '\tmemory_config TEXT, \n'
        '\tpadded_shape TEXT, \n'
        '\tplacement TEXT, \n'
        '\tPRIMARY KEY (spec_id)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS tensors (\n'
        '\ttensor_id INTEGER NOT NULL, \n'
        '\tshape TEXT, \n'
        '\tdtype TEXT, \n'
        '\tlayout TEXT, \n'
        '\tmemory_config TEXT, \n'
        '\tdevice_id INTEGER, \n'
        '\taddress INTEGER, \n'
        '\tbuffer_type INTEGER, \n'
        '\tsize INTEGER, \n'
        '\tmemory_config_source TEXT, \n'
        '\tproducer_operation_id INTEGER, \n'
        '\tfile TEXT, \n'
        '\tpadded_shape TEXT, \n'
        '\tstorage_type TEXT, \n'
        '\tspec_id INTEGER, \n'
        "\trank INTEGER DEFAULT '0', \n"
        '\tPRIMARY KEY (tensor_id)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS tensor_files (\n'
        '\ttensor_id INTEGER NOT NULL, \n'
        '\tfile_bytes INTEGER, \n'
        '\tcrc32 INTEGER, \n'
        '\tshape TEXT, \n'
        '\tdtype TEXT, \n'
        '\tPRIMARY KEY (tensor_id) ON CONFLICT REPLACE\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS device_tensor_files (\n'
        '\ttensor_id INTEGER NOT NULL, \n'
        '\tdevice_id INTEGER NOT NULL, \n'
        '\tfile_bytes INTEGER, \n'
        '\tcrc32 INTEGER, \n'
        '\tshape TEXT, \n'
        '\tdtype TEXT, \n'
        '\tPRIMARY KEY (tensor_id, device_id) ON CONFLICT REPLACE\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS tensor_writes (\n'
        '\toperation_id INTEGER NOT NULL, \n'
        '\ttensor_id INTEGER NOT NULL, \n'
        '\tfile TEXT, \n'
        '\tfile_bytes INTEGER, \n'
        '\tcrc32 INTEGER, \n'
        '\tshape TEXT, \n'
        '\tdtype TEXT, \n'
        '\tPRIMARY KEY (operation_id, tensor_id) ON CONFLICT REPLACE\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS input_tensors (\n'
        '\toperation_id INTEGER, \n'
        '\tinput_index INTEGER, \n'
        '\ttensor_id INTEGER, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS output_tensors (\n'
        '\toperation_id INTEGER, \n'
        '\toutput_index INTEGER, \n'
        '\ttensor_id INTEGER, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS devices (\n'
        '\tdevice_id INTEGER NOT NULL, \n'
        '\tnum_y_cores INTEGER, \n'
        '\tnum_x_cores INTEGER, \n'
        '\tnum_y_compute_cores INTEGER, \n'
        '\tnum_x_compute_cores INTEGER, \n'
        '\tworker_l1_size INTEGER, \n'
        '\tl1_num_banks INTEGER, \n'
        '\tl1_bank_size INTEGER, \n'
        '\taddress_at_first_l1_bank INTEGER, \n'
        '\taddress_at_first_l1_cb_buffer INTEGER, \n'
        '\tnum_banks_per_storage_core INTEGER, \n'
        '\tnum_compute_cores INTEGER, \n'
        '\tnum_storage_cores INTEGER, \n'
        '\ttotal_l1_memory INTEGER, \n'
        '\ttotal_l1_for_tensors INTEGER, \n'
        '\ttotal_l1_for_interleaved_buffers INTEGER, \n'
        '\ttotal_l1_for_sharded_buffers INTEGER, \n'
        '\tcb_limit INTEGER, \n'
        '\tPRIMARY KEY (device_id)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS buffer_lifetimes (\n'
        '\tbuffer_id INTEGER NOT NULL, \n'
        '\tdevice_id INTEGER, \n'
        '\taddress INTEGER, \n'
        '\tmax_size_per_bank INTEGER, \n'
        '\tbuffer_type INTEGER, \n'
        '\tbuffer_layout INTEGER, \n'
        '\tsize INTEGER, \n'
        '\tallocated_seq INTEGER, \n'
        '\tfreed_seq INTEGER, \n'
        '\tallocated_by_operation_id INTEGER, \n'
        '\tPRIMARY KEY (buffer_id)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS buffers (\n'
        '\toperation_id INTEGER, \n'
        '\tdevice_id INTEGER, \n'
        '\taddress INTEGER, \n'
        '\tmax_size_per_bank INTEGER, \n'
        '\tbuffer_type INTEGER, \n'
        '\tbuffer_layout INTEGER, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS buffer_pages (\n'
        '\toperation_id INTEGER, \n'
        '\tdevice_id INTEGER, \n'
        '\taddress INTEGER, \n'
        '\tcore_y INTEGER, \n'
        '\tcore_x INTEGER, \n'
        '\tbank_id INTEGER, \n'
        '\tpage_index INTEGER, \n'
        '\tpage_address INTEGER, \n'
        '\tpage_size INTEGER, \n'
        '\tbuffer_type INTEGER, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS buffer_chunks (\n'
        '\toperation_id INTEGER, \n'
        '\tdevice_id INTEGER, \n'
        '\taddress INTEGER, \n'
        '\tbank_id INTEGER, \n'
        '\tcore_x INTEGER, \n'
        '\tcore_y INTEGER, \n'
        '\tchunk_address INTEGER, \n'
        '\tchunk_size INTEGER, \n'
        '\tpage_size INTEGER, \n'
        '\tnum_pages INTEGER, \n'
        '\tbuffer_type INTEGER, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS device_tensors (\n'
        '\ttensor_id INTEGER, \n'
        '\tdevice_id INTEGER, \n'
        '\taddress INTEGER, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS source_files (\n'
        '\tid INTEGER NOT NULL, \n'
        '\tpath TEXT NOT NULL, \n'
        '\tcontents TEXT, \n'
        '\tPRIMARY KEY (id), \n'
        '\tUNIQUE (path)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS stack_trace_texts (\n'
        '\tstack_trace_id INTEGER NOT NULL, \n'
        '\tstack_trace TEXT, \n'
        '\tsource_file_id INTEGER, \n'
        '\tPRIMARY KEY (stack_trace_id)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS stack_traces (\n'
        '\toperation_id INTEGER, \n'
        '\tstack_trace TEXT, \n'
        '\tsource_file_id INTEGER, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS tensor_lifetime (\n'
        '\ttensor_id INTEGER NOT NULL, \n'
        '\tproducer_operation_id INTEGER, \n'
        '\tlast_use_operation_id INTEGER, \n'
        '\tdeallocate_operation_id INTEGER, \n'
        '\tproducer_source_file TEXT, \n'
        '\tproducer_source_line INTEGER, \n'
        '\tlast_use_source_file TEXT, \n'
        '\tlast_use_source_line INTEGER, \n'
        '\tPRIMARY KEY (tensor_id)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS distinct_graphs (\n'
        '\tgraph_id INTEGER NOT NULL, \n'
        '\tcaptured_graph TEXT, \n'
        '\tPRIMARY KEY (graph_id)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS operation_graphs (\n'
        '\toperation_id INTEGER NOT NULL, \n'
        '\tgraph_id INTEGER, \n'
        '\tPRIMARY KEY (operation_id)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS captured_graph (\n'
        '\toperation_id INTEGER, \n'
        '\tcaptured_graph TEXT, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS nodes (\n'
        '\toperation_id INTEGER, \n'
        '\tunique_id INTEGER, \n'
        '\tnode_operation_id INTEGER, \n'
        '\tname TEXT, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS edges (\n'
        '\toperation_id INTEGER, \n'
        '\tsource_unique_id INTEGER, \n'
        '\tsink_unique_id INTEGER, \n'
        '\tsource_output_index INTEGER, \n'
        '\tsink_input_index INTEGER, \n'
        '\t"key" INTEGER, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS errors (\n'
        '\toperation_id INTEGER, \n'
        '\toperation_name TEXT, \n'
        '\terror_type TEXT, \n'
        '\terror_message TEXT, \n'
        '\tstack_trace TEXT, \n'
        '\ttimestamp TEXT, \n'
        "\trank INTEGER DEFAULT '0'\n"
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS local_tensor_comparison_records (\n'
        '\ttensor_id INTEGER, \n'
        '\tgolden_tensor_id INTEGER, \n'
        '\tmatches INTEGER, \n'
        '\tdesired_pcc FLOAT, \n'
        '\tactual_pcc FLOAT\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS global_tensor_comparison_records (\n'
        '\ttensor_id INTEGER, \n'
        '\tgolden_tensor_id INTEGER, \n'
        '\tmatches INTEGER, \n'
        '\tdesired_pcc FLOAT, \n'
        '\tactual_pcc FLOAT\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS tensor_comparisons (\n'
        '\toperation_id INTEGER, \n'
        '\tmode TEXT, \n'
        '\ttensor_id INTEGER, \n'
        '\tgolden_tensor_id INTEGER, \n'
        '\tstatus TEXT, \n'
        '\treason TEXT, \n'
        '\tpcc FLOAT, \n'
        '\tdesired_pcc FLOAT, \n'
        '\tmax_abs_error FLOAT, \n'
        '\tmean_abs_error FLOAT, \n'
        '\tmax_rel_error FLOAT, \n'
        '\tmismatched INTEGER, \n'
        '\tmismatched_fraction FLOAT, \n'
        '\tnumel INTEGER, \n'
        '\tmax_ulp FLOAT, \n'
        '\trtol FLOAT, \n'
        '\tatol FLOAT, \n'
        '\tworst_index TEXT, \n'
        '\tworst_actual FLOAT, \n'
        '\tworst_golden FLOAT, \n'
        '\tdevice_id INTEGER\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS device_perf (\n'
        '\toperation_id INTEGER NOT NULL, \n'
        '\tcompute_ns INTEGER, \n'
        '\tbandwidth_ns INTEGER, \n'
        '\tideal_ns INTEGER, \n'
        '\tbound TEXT, \n'
        '\tmath_fidelity TEXT, \n'
        '\tPRIMARY KEY (operation_id)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS measured_perf (\n'
        '\tposition INTEGER NOT NULL, \n'
        '\toperation_id INTEGER, \n'
        '\top_code TEXT, \n'
        '\tdevice_id INTEGER, \n'
        '\tglobal_call_count INTEGER, \n'
        '\tkernel_ns INTEGER, \n'
        '\tfw_ns INTEGER, \n'
        '\tcore_count INTEGER, \n'
        '\tmath_fidelity TEXT, \n'
        '\tinputs TEXT, \n'
        '\toutputs TEXT, \n'
        '\tattributes TEXT, \n'
        '\tPRIMARY KEY (position)\n'
        ')'
    ),
    (
        'CREATE TABLE IF NOT EXISTS report_metadata (\n'
        '\t"key" TEXT NOT NULL, \n'
        '\tvalue TEXT, \n'
        '\tPRIMARY KEY ("key")\n'
        ')'
    ),
    (
        'CREATE VIEW IF NOT EXISTS op_tensors AS \n'
        "        SELECT o.operation_id, o.name, 'input' AS direction, i.input_index AS tensor_index, t.*\n"
        '        FROM operations o JOIN input_tensors i USING (operation_id) JOIN tensors t USING '
        '(tensor_id)\n'
        '        UNION ALL\n'
        "        SELECT o.operation_id, o.name, 'output', x.output_index, t.*\n"
        '        FROM operations o JOIN output_tensors x USING (operation_id) JOIN tensors t USING '
        '(tensor_id)'
    ),
    (
        'CREATE VIEW IF NOT EXISTS memory_after_op AS \n'
        '        SELECT operation_id, name, l1_bytes, dram_bytes FROM operations'
    ),
    (
        'CREATE TRIGGER IF NOT EXISTS tensor_specs_update \n'
        '        AFTER UPDATE ON tensor_specs BEGIN\n'
        '            UPDATE tensors SET shape = NEW.shape, dtype = NEW.dtype, layout = NEW.layout,\n'
        '                               memory_config = NEW.memory_config, padded_shape = NEW.padded_shape\n'
        '            WHERE spec_id = OLD.spec_id;\n'
        '        END'
    ),
    (
        'CREATE TABLE IF NOT EXISTS alembic_version (\n'
        '\tversion_num VARCHAR(32) NOT NULL, \n'
        '\tCONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)\n'
        ')'
    ),
]

# schema.INDEXES by name, in their order (db.create_indexes adds IF NOT EXISTS).
INDEXES = {
    'ix_operations_name': (
        'CREATE INDEX ix_operations_name ON operations (name) WHERE name IS NOT NULL'
    ),
    'ix_operations_name_duration': (
        'CREATE INDEX ix_operations_name_duration ON operations (name, duration) WHERE name IS NOT NULL'
    ),
    'ix_operations_parent': (
        'CREATE INDEX ix_operations_parent ON operations (parent_operation_id) WHERE parent_operation_id IS '
        'NOT NULL'
    ),
    'ix_operations_duration': (
        'CREATE INDEX ix_operations_duration ON operations (duration)'
    ),
    'ix_operations_l1_bytes': (
        'CREATE INDEX ix_operations_l1_bytes ON operations (l1_bytes DESC)'
    ),
    'ix_operation_arguments_op': (
        'CREATE INDEX ix_operation_arguments_op ON operation_arguments (operation_id)'
    ),
    'ix_tensors_producer': (
        'CREATE INDEX ix_tensors_producer ON tensors (producer_operation_id) WHERE producer_operation_id IS '
        'NOT NULL'
    ),
    'ix_input_tensors_op': (
        'CREATE INDEX ix_input_tensors_op ON input_tensors (operation_id)'
    ),
    'ix_input_tensors_tensor': (
        'CREATE INDEX ix_input_tensors_tensor ON input_tensors (tensor_id) WHERE tensor_id IS NOT NULL'
    ),
    'ix_output_tensors_op': (
        'CREATE INDEX ix_output_tensors_op ON output_tensors (operation_id)'
    ),
    'ix_output_tensors_tensor': (
        'CREATE INDEX ix_output_tensors_tensor ON output_tensors (tensor_id) WHERE tensor_id IS NOT NULL'
    ),
    'ix_buffer_lifetimes_seq': (
        'CREATE INDEX ix_buffer_lifetimes_seq ON buffer_lifetimes (allocated_seq, freed_seq) WHERE '
        'allocated_seq IS NOT NULL'
    ),
    'ix_buffers_op': (
        'CREATE INDEX ix_buffers_op ON buffers (operation_id)'
    ),
    'ix_buffer_pages_op': (
        'CREATE INDEX ix_buffer_pages_op ON buffer_pages (operation_id)'
    ),
    'ix_buffer_chunks_op': (
        'CREATE INDEX ix_buffer_chunks_op ON buffer_chunks (operation_id)'
    ),
    'ix_device_tensors_tensor': (
        'CREATE INDEX ix_device_tensors_tensor ON device_tensors (tensor_id) WHERE tensor_id IS NOT NULL'
    ),
    'ix_tensor_writes_tensor': (
        'CREATE INDEX ix_tensor_writes_tensor ON tensor_writes (tensor_id, operation_id) WHERE tensor_id IS '
        'NOT NULL'
    ),
    'ix_stack_traces_op': (
        'CREATE INDEX ix_stack_traces_op ON stack_traces (operation_id)'
    ),
    'idx_stack_traces_source_file_id': (
        'CREATE INDEX idx_stack_traces_source_file_id ON stack_traces (source_file_id) WHERE source_file_id '
        'IS NOT NULL'
    ),
    'ix_errors_op': (
        'CREATE INDEX ix_errors_op ON errors (operation_id)'
    ),
    'ix_nodes_op': (
        'CREATE INDEX ix_nodes_op ON nodes (operation_id)'
    ),
    'ix_edges_op': (
        'CREATE INDEX ix_edges_op ON edges (operation_id)'
    ),
    'ix_local_cmp_tensor': (
        'CREATE INDEX ix_local_cmp_tensor ON local_tensor_comparison_records (tensor_id) WHERE tensor_id IS '
        'NOT NULL'
    ),
    'ix_global_cmp_tensor': (
        'CREATE INDEX ix_global_cmp_tensor ON global_tensor_comparison_records (tensor_id) WHERE tensor_id '
        'IS NOT NULL'
    ),
    'ix_tensor_comparisons_op': (
        'CREATE INDEX ix_tensor_comparisons_op ON tensor_comparisons (operation_id)'
    ),
    'ix_tensor_comparisons_tensor': (
        'CREATE INDEX ix_tensor_comparisons_tensor ON tensor_comparisons (tensor_id) WHERE tensor_id IS NOT '
        'NULL'
    ),
}

# Each table of schema.py and its columns, in order: what the capture checks rows and
# names tables against without importing SQLAlchemy (~0.2-0.7 s of a cold start).
COLUMNS = {
    'buffer_chunks': (
        'operation_id',
        'device_id',
        'address',
        'bank_id',
        'core_x',
        'core_y',
        'chunk_address',
        'chunk_size',
        'page_size',
        'num_pages',
        'buffer_type',
        'rank',
    ),
    'buffer_lifetimes': (
        'buffer_id',
        'device_id',
        'address',
        'max_size_per_bank',
        'buffer_type',
        'buffer_layout',
        'size',
        'allocated_seq',
        'freed_seq',
        'allocated_by_operation_id',
    ),
    'buffer_pages': (
        'operation_id',
        'device_id',
        'address',
        'core_y',
        'core_x',
        'bank_id',
        'page_index',
        'page_address',
        'page_size',
        'buffer_type',
        'rank',
    ),
    'buffers': ('operation_id', 'device_id', 'address', 'max_size_per_bank', 'buffer_type', 'buffer_layout', 'rank'),
    'captured_graph': ('operation_id', 'captured_graph', 'rank'),
    'device_perf': ('operation_id', 'compute_ns', 'bandwidth_ns', 'ideal_ns', 'bound', 'math_fidelity'),
    'device_tensor_files': ('tensor_id', 'device_id', 'file_bytes', 'crc32', 'shape', 'dtype'),
    'device_tensors': ('tensor_id', 'device_id', 'address', 'rank'),
    'devices': (
        'device_id',
        'num_y_cores',
        'num_x_cores',
        'num_y_compute_cores',
        'num_x_compute_cores',
        'worker_l1_size',
        'l1_num_banks',
        'l1_bank_size',
        'address_at_first_l1_bank',
        'address_at_first_l1_cb_buffer',
        'num_banks_per_storage_core',
        'num_compute_cores',
        'num_storage_cores',
        'total_l1_memory',
        'total_l1_for_tensors',
        'total_l1_for_interleaved_buffers',
        'total_l1_for_sharded_buffers',
        'cb_limit',
    ),
    'distinct_graphs': ('graph_id', 'captured_graph'),
    'edges': (
        'operation_id',
        'source_unique_id',
        'sink_unique_id',
        'source_output_index',
        'sink_input_index',
        'key',
        'rank',
    ),
    'errors': ('operation_id', 'operation_name', 'error_type', 'error_message', 'stack_trace', 'timestamp', 'rank'),
    'global_tensor_comparison_records': ('tensor_id', 'golden_tensor_id', 'matches', 'desired_pcc', 'actual_pcc'),
    'input_tensors': ('operation_id', 'input_index', 'tensor_id', 'rank'),
    'local_tensor_comparison_records': ('tensor_id', 'golden_tensor_id', 'matches', 'desired_pcc', 'actual_pcc'),
    'measured_perf': (
        'position',
        'operation_id',
        'op_code',
        'device_id',
        'global_call_count',
        'kernel_ns',
        'fw_ns',
        'core_count',
        'math_fidelity',
        'inputs',
        'outputs',
        'attributes',
    ),
    'nodes': ('operation_id', 'unique_id', 'node_operation_id', 'name', 'rank'),
    'operation_arguments': ('operation_id', 'name', 'value', 'rank'),
    'operation_graphs': ('operation_id', 'graph_id'),
    'operations': (
        'operation_id',
        'name',
        'duration',
        'start_ns',
        'end_ns',
        'parent_operation_id',
        'depth',
        'status',
        'thread',
        'stack_trace_id',
        'end_seq',
        'l1_bytes',
        'dram_bytes',
        'arguments',
        'rank',
        'step',
    ),
    'output_tensors': ('operation_id', 'output_index', 'tensor_id', 'rank'),
    'report_metadata': ('key', 'value'),
    'source_files': ('id', 'path', 'contents'),
    'stack_trace_texts': ('stack_trace_id', 'stack_trace', 'source_file_id'),
    'stack_traces': ('operation_id', 'stack_trace', 'source_file_id', 'rank'),
    'tensor_comparisons': (
        'operation_id',
        'mode',
        'tensor_id',
        'golden_tensor_id',
        'status',
        'reason',
        'pcc',
        'desired_pcc',
        'max_abs_error',
        'mean_abs_error',
        'max_rel_error',
        'mismatched',
        'mismatched_fraction',
        'numel',
        'max_ulp',
        'rtol',
        'atol',
        'worst_index',
        'worst_actual',
        'worst_golden',
        'device_id',
    ),
    'tensor_files': ('tensor_id', 'file_bytes', 'crc32', 'shape', 'dtype'),
    'tensor_lifetime': (
        'tensor_id',
        'producer_operation_id',
        'last_use_operation_id',
        'deallocate_operation_id',
        'producer_source_file',
        'producer_source_line',
        'last_use_source_file',
        'last_use_source_line',
    ),
    'tensor_specs': ('spec_id', 'shape', 'dtype', 'layout', 'memory_config', 'padded_shape', 'placement'),
    'tensor_writes': ('operation_id', 'tensor_id', 'file', 'file_bytes', 'crc32', 'shape', 'dtype'),
    'tensors': (
        'tensor_id',
        'shape',
        'dtype',
        'layout',
        'memory_config',
        'device_id',
        'address',
        'buffer_type',
        'size',
        'memory_config_source',
        'producer_operation_id',
        'file',
        'padded_shape',
        'storage_type',
        'spec_id',
        'rank',
    ),
}

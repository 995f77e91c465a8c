/* Generated from ttreport/capturing/records.py by c_header() (setup.py writes it before building). Do
 * not edit: change records.py; tests/test_records.py fails while this differs from it. */
#ifndef TTREPORT_RECORDS_H
#define TTREPORT_RECORDS_H

#define TAG_OP 0
#define TAG_ALLOC 1
#define TAG_FREE 2
#define TAG_TENSOR 3
#define TAG_DEVICE 4
#define TAG_ROW 5
#define TAG_META 6
#define TAG_FILE_LOST 7
#define TAG_FLUSH 8
#define TAG_STOP 9
#define TAG_PROGRAM 10
#define TAG_VALUES 19
#define TAG_CODE 20
#define TAG_CFG 21
#define TAG_OBJ 22
#define TAG_DEVICE_PERF 23
#define TAG_STACK 24
#define TAG_CBS 25
#define TAG_PROG 26

#define OP_NAME 1
#define OP_OPERATION_ID 2
#define OP_START_NS 3
#define OP_END_NS 4
#define OP_PARENT_OPERATION_ID 5
#define OP_DEPTH 6
#define OP_THREAD 7
#define OP_STACK 8
#define OP_ARGS 9
#define OP_KWARGS 10
#define OP_INPUTS 11
#define OP_OUTPUTS 12
#define OP_SPECS 13
#define OP_FILES 14
#define OP_END_SEQ 15
#define OP_L1_BYTES 16
#define OP_DRAM_BYTES 17
#define OP_ERROR 18
#define OP_STEP 19
#define OP_WIDTH 20

#define SPEC_TENSOR_ID 0
#define SPEC_SHAPE 1
#define SPEC_DTYPE 2
#define SPEC_LAYOUT 3
#define SPEC_CONFIG_ID 4
#define SPEC_MEMORY_CONFIG_SOURCE 5
#define SPEC_DEVICE_ID 6
#define SPEC_ADDRESS 7
#define SPEC_BUFFER_TYPE 8
#define SPEC_SIZE 9
#define SPEC_PRODUCER_OPERATION_ID 10
#define SPEC_WIDTH 11

#define TOKEN_OP 0
#define TOKEN_OPERATION_ID 1
#define TOKEN_START_NS 2
#define TOKEN_PARENT_OPERATION_ID 3
#define TOKEN_DEPTH 4
#define TOKEN_THREAD 5
#define TOKEN_STACK 6
#define TOKEN_ARGS 7
#define TOKEN_KWARGS 8
#define TOKEN_INPUTS 9
#define TOKEN_SPECS 10
#define TOKEN_FILES 11
#define TOKEN_GOLDEN_ARGS 12
#define TOKEN_OP_ARGS 13
#define TOKEN_OP_KWARGS 14
#define TOKEN_STEP 15
#define TOKEN_WIDTH 16

#define ALLOC_BUFFER_ID 1
#define ALLOC_DEVICE_ID 2
#define ALLOC_ADDRESS 3
#define ALLOC_MAX_SIZE_PER_BANK 4
#define ALLOC_BUFFER_TYPE 5
#define ALLOC_BUFFER_LAYOUT 6
#define ALLOC_SIZE 7
#define ALLOC_ALLOCATED_SEQ 8
#define ALLOC_ALLOCATED_BY_OPERATION_ID 9
#define ALLOC_WIDTH 10

#define FREE_BUFFER_ID 1
#define FREE_FREED_SEQ 2
#define FREE_WIDTH 3

#define PROGRAM_OPERATION_ID 1
#define PROGRAM_PROGRAM_NUMBER 2
#define PROGRAM_PROGRAM_ID 3
#define PROGRAM_DEVICE_ID 4
#define PROGRAM_CB_BASE 5
#define PROGRAM_WIDTH 6

#define VALUES_TENSOR_ID 1
#define VALUES_PATH 2
#define VALUES_DTYPE 3
#define VALUES_SHAPE 4
#define VALUES_DATA 5
#define VALUES_EXTRA 6
#define VALUES_DEVICE 7
#define VALUES_WIDTH 8

#endif

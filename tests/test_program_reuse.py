"""A model's op, called again on tensors like its last call's, launches the program objects it launched then.

A capture's op log defines a program's static part once and names it by number at each launch
(ttreport.capturing.oplog.LogSink.program), keyed by the identity of the program's CBs and core ranges: a builder
that makes a new program at every call (softmax's did) writes a new definition at every launch, which the writer
process decodes and draws a captured graph for again. Each op a small encoder layer calls (BERT's, as
tt-metal's ttnn_optimized_bert.py calls them, with a matmul program config made per call as model code makes it,
and minimal_matmul) is held to one program object per what decides it, here and in a real capture's log; so is
every registered op's docstring example run twice.

    .venv/bin/python -m pytest tests/test_program_reuse.py -q
"""

import doctest

import torch

import device_sim as ttnn
import ttreport
from device_sim import registry
from ttreport.capturing.oplog import LogTail
from ttreport.folder import OPLOG_DIR

B, S, H, HEADS = 1, 64, 64, 2


def _layer(device):
    """One small encoder layer's ops on the same inputs each call; every output is deallocated at its end."""
    g = torch.Generator().manual_seed(0)
    L1 = ttnn.L1_MEMORY_CONFIG

    def t(*shape, scale=1.0):
        return ttnn.from_torch((torch.randn(*shape, generator=g) * scale).bfloat16(), dtype=ttnn.bfloat16,
                               layout=ttnn.TILE, device=device)

    x, wqkv, bqkv, wo, w1, w2 = t(B, S, H), t(H, 3 * H, scale=0.05), t(1, 3 * H), t(H, H, scale=0.05), \
        t(H, 2 * H, scale=0.05), t(2 * H, H, scale=0.05)
    gamma, beta, mask = t(1, H), t(1, H), t(B, 1, 1, S)

    def run():
        qkv = ttnn.linear(x, wqkv, bias=bqkv, memory_config=L1, dtype=ttnn.bfloat8_b)
        q, k, v = ttnn.transformer.split_query_key_value_and_split_heads(qkv, memory_config=L1, num_heads=HEADS)
        s = ttnn.matmul(q, k, memory_config=L1)
        p = ttnn.transformer.attention_softmax_(s, attention_mask=mask, head_size=H // HEADS)
        z = ttnn.softmax(ttnn.multiply(s, 0.125), dim=-1)
        c = ttnn.transformer.concatenate_heads(ttnn.matmul(p, v, memory_config=L1), memory_config=L1)
        cfg = ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(  # made per call, as model code makes its configs
            compute_with_storage_grid_size=(2, 2), in0_block_w=1, out_subblock_h=1, out_subblock_w=1,
            per_core_M=1, per_core_N=1, transpose_mcast=False)
        h = ttnn.layer_norm(ttnn.add(x, ttnn.matmul(c, wo, program_config=cfg)), weight=gamma, bias=beta)
        f = ttnn.experimental.minimal_matmul(ttnn.gelu(ttnn.linear(h, w1)), w2)
        y = ttnn.layer_norm(f, residual_input_tensor=h, weight=gamma, bias=beta)
        for out in (qkv, q, k, v, s, p, z, c, h, f, y):
            ttnn.deallocate(out)

    return run


def test_a_layer_run_again_launches_the_program_objects_it_launched_before(device):
    heard = []
    device.memory.listener = lambda event, obj: heard.append(obj) if event == "program" else None
    run = _layer(device)
    run()
    first = list(heard)
    heard.clear()
    run()
    assert [(p.name, p.factory) for p in heard] == [(p.name, p.factory) for p in first]
    assert {p.name for p in first} >= {"SoftmaxDeviceOperation", "MatmulDeviceOperation",
                                       "MinimalMatmulDeviceOperation", "LayerNormDeviceOperation"}
    remade = [(p.name, p.factory) for p, q in zip(first, heard) if p.cbs is not q.cbs or p.ranges is not q.ranges]
    assert remade == [], remade


def _definitions(tail: LogTail) -> int:
    """The programs the log has defined so far, once `tail` has read all that is written."""
    while tail.read(1000)[0]:
        pass
    return len(tail.defs.programs)


def test_a_captured_layer_run_again_defines_no_program_in_the_op_log(tmp_path, device):
    run = _layer(device)
    spare = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(device_graphs=True)):
        run()
        ttnn.deallocate(ttnn.clone(spare))  # an op after the layer's last: its write carries what waits for one
        tail = LogTail(tmp_path / "r" / OPLOG_DIR, trusted=True)
        defined = _definitions(tail)
        run()
        run()
        ttnn.deallocate(ttnn.clone(spare))
        assert defined >= 8 and _definitions(tail) == defined
        tail.close()


def test_every_ops_example_run_again_launches_the_program_objects_it_launched_before(device):
    # Each op's docstring example (tests/test_doctests.py runs them) twice on one device, as a model calls an op again
    # on tensors like its last call's: a program equal to one of the first run's is that same object. The 8 examples
    # that open a mesh of their own (the collectives: programs/ccl.py builds through device_work.cached) need device
    # 0, which this test holds.
    heard = []
    device.memory.listener = lambda event, obj: heard.append(obj) if event == "program" else None
    parser, launched, remade = doctest.DocTestParser(), set(), []
    for op in registry.registered_ops():
        doc = op.function.__doc__ or ""
        if ">>>" not in doc or "open_mesh_device" in doc:
            continue
        runs = []
        for _ in range(2):
            heard.clear()
            names = {"torch": torch, "ttnn": ttnn, "device": device}
            for example in parser.get_examples(doc):
                exec(compile(example.source, op.name, "exec"), names)
            runs.append(list(heard))
        first: dict[tuple, list] = {}  # a composite op may build one value under two keys: two objects, both kept
        for p in runs[0]:
            first.setdefault((p.name, p.factory, p.cbs, p.ranges, p.cb_bytes), []).append(p)
        for p in runs[1]:
            same = first.get((p.name, p.factory, p.cbs, p.ranges, p.cb_bytes), [p])
            if not any(q.cbs is p.cbs and q.ranges is p.ranges for q in same):
                remade.append((op.name, p.name, p.factory))
        if runs[0]:
            launched.add(op.name)
    assert len(launched) >= 400, len(launched)  # 478 when this test was written
    assert remade == [], remade

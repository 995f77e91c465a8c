"""ttnn.linear is one op, as in TT-NN: matmul, bias and activation in one body with one output buffer.

    .venv/bin/python -m pytest tests/test_linear_one_op.py -q
"""

import torch

import device_sim as ttnn
import ttreport


def _l1_inputs(device, g):
    x = ttnn.from_torch(torch.randn(64, 128, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        memory=ttnn.L1)
    w = ttnn.from_torch(torch.randn(128, 96, generator=g), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device,
                        memory=ttnn.L1)
    b = ttnn.from_torch(torch.randn(1, 96, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        memory=ttnn.L1)
    return x, w, b


def test_a_bias_and_activation_linear_is_one_row_with_one_output_and_no_other_buffer(tmp_path):
    device = ttnn.open_device(0)
    try:
        x, w, b = _l1_inputs(device, torch.Generator().manual_seed(0))
        with ttreport.capture(tmp_path / "r") as handle:
            y = ttnn.linear(x, w, bias=b, activation="relu", memory=ttnn.L1)
    finally:
        ttnn.close_device(device)
    with ttreport.open(handle.path) as r:
        [op] = r.operations()
        assert op.name == "ttnn.linear"
        assert [t.id for t in op.output_tensors] == [y.tensor_id]
        assert [t.id for t in op.input_tensors] == [x.tensor_id, w.tensor_id, b.tensor_id]
        made = r.sql("SELECT buffer_type, size FROM buffer_lifetimes WHERE allocated_by_operation_id = ?", (op.id,))
        assert made == [{"buffer_type": 1, "size": y.buffer.size}]  # the output only: no float32 temporary
        assert r.tensor(y.tensor_id).dtype == "DataType.BFLOAT16"


def test_peak_l1_of_a_linear_is_its_inputs_and_its_output(tmp_path):
    device = ttnn.open_device(0)
    try:
        x, w, b = _l1_inputs(device, torch.Generator().manual_seed(1))
        with ttreport.capture(tmp_path / "r") as handle:
            y = ttnn.linear(x, w, bias=b, activation="gelu", memory=ttnn.L1)
        tensors = (x, w, b, y)
    finally:
        ttnn.close_device(device)
    with ttreport.open(handle.path) as r:
        per_tensor = [r.per_bank_bytes(r.tensor(t.tensor_id)) * r.banks("L1") for t in tensors]
        peak = r.summary().peak_l1
    assert peak["name"] == "ttnn.linear"
    assert peak["bytes"] == sum(per_tensor)


def test_the_one_op_keeps_the_values_of_matmul_then_bias_then_activation():
    device = ttnn.open_device(0)
    try:
        x, w, b = _l1_inputs(device, torch.Generator().manual_seed(2))
        y = ttnn.to_torch(ttnn.linear(x, w, bias=b, activation="relu"))
        want = torch.relu(ttnn.to_torch(x).float() @ ttnn.to_torch(w).float() + ttnn.to_torch(b).float())
    finally:
        ttnn.close_device(device)
    # Rounded once, to bfloat16: within one bfloat16 step of the float32 result.
    assert torch.allclose(y.float(), want, rtol=2 ** -8, atol=1e-6)

"""output_tensor= / optional_output_tensor=: the op writes into the given tensor, and the report says so."""

import inspect
import sqlite3

import pytest
import torch

import device_sim as ttnn
import ttreport


def dev(values, device, dtype=ttnn.bfloat16):
    return ttnn.from_torch(values, dtype=dtype, layout=ttnn.TILE, device=device)


@pytest.fixture
def ab(device):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(2, 32, 64, generator=g), torch.randn(2, 32, 64, generator=g)
    return a, b, dev(a, device), dev(b, device)


def held(x: torch.Tensor, dtype=torch.bfloat16) -> torch.Tensor:
    return x.to(dtype).float()


@pytest.mark.parametrize("op, fn", [(ttnn.add, torch.add), (ttnn.mul, torch.mul), (ttnn.subtract, torch.sub)])
def test_a_binary_op_writes_into_the_output_tensor_keeping_its_buffer_and_id(device, ab, op, fn):
    a, b, ta, tb = ab
    out = dev(torch.zeros(2, 32, 64), device)
    address, tensor_id, spec = out.buffer_address(), out.tensor_id, out.spec
    got = op(ta, tb, output_tensor=out)
    assert got is out
    assert (out.buffer_address(), out.tensor_id, out.spec) == (address, tensor_id, spec)
    torch.testing.assert_close(out.to_torch().float(), held(fn(held(a), held(b))))


def test_a_unary_op_writes_into_the_output_tensor(device, ab):
    a, _, ta, _ = ab
    out = dev(torch.zeros(2, 32, 64), device)
    assert ttnn.relu(ta, output_tensor=out) is out
    torch.testing.assert_close(out.to_torch().float(), held(torch.relu(held(a))))


def test_the_output_tensors_dtype_is_the_results_dtype(device, ab):
    a, b, ta, tb = ab
    out = dev(torch.zeros(2, 32, 64), device, dtype=ttnn.float32)
    ttnn.add(ta, tb, output_tensor=out)
    assert out.dtype == ttnn.float32
    torch.testing.assert_close(out.to_torch(), held(a) + held(b))


def test_matmul_takes_optional_output_tensor(device):
    a, b = dev(torch.randn(32, 64), device), dev(torch.randn(64, 32), device)
    out = dev(torch.zeros(32, 32), device)
    assert ttnn.matmul(a, b, optional_output_tensor=out) is out
    # The same values a new output gets (matmul's numerics are its own tests' concern).
    assert torch.equal(out.to_torch(), ttnn.matmul(a, b).to_torch())
    torch.testing.assert_close(out.to_torch().float(), a.to_torch().float() @ b.to_torch().float(), rtol=0.1, atol=0.5)


def test_output_tensor_none_is_tt_nns_default_a_new_tensor(device, ab):
    _, _, ta, tb = ab
    out = ttnn.add(ta, tb, output_tensor=None)
    assert out is not ta and out is not tb and out.shape == (2, 32, 64)


def test_a_wrong_output_tensor_is_an_error_naming_it(device, ab):
    _, _, ta, tb = ab
    small = dev(torch.zeros(32, 64), device)
    # binary_ng's own check, worded as TT-NN's TT_FATAL, with the fix on its last line
    with pytest.raises(RuntimeError, match=r"(?s)Shape of Output tensor Shape\(\[32, 64\]\) provided does not match "
                                           r"the broadcasted output shape Shape\(\[2, 32, 64\]\).*ttnn.add: pass an "
                                           r"output_tensor of shape \[2, 32, 64\], or none"):
        ttnn.add(ta, tb, output_tensor=small)
    with pytest.raises(ValueError, match=rf"ttnn.exp: output tensor {small.tensor_id} has shape \[32, 64\] but the "
                                         r"op's result has shape \[2, 32, 64\]"):
        ttnn.exp(ta, output_tensor=small)
    host = ttnn.from_torch(torch.zeros(2, 32, 64), dtype=ttnn.bfloat16)
    with pytest.raises(ValueError, match=rf"output_tensor {host.tensor_id} is on the host but the inputs are on "):
        ttnn.add(ta, tb, output_tensor=host)
    with pytest.raises(TypeError, match="output_tensor= must be a ttnn tensor to write into, got Tensor"):
        ttnn.add(ta, tb, output_tensor=torch.zeros(2, 32, 64))


def test_the_report_records_the_given_tensor_as_the_ops_output(tmp_path, device, ab):
    _, _, ta, tb = ab
    out = dev(torch.zeros(2, 32, 64), device)
    with ttreport.capture(tmp_path / "r") as report:
        ttnn.mul(ta, tb, output_tensor=out)
        ttnn.exp(out, output_tensor=out)  # in place, as models write it
    con = sqlite3.connect(report.db_path)
    try:
        ops = con.execute("SELECT operation_id, name FROM operations ORDER BY operation_id").fetchall()
        assert [name for _, name in ops] == ["ttnn.mul", "ttnn.exp"]
        outputs = con.execute("SELECT operation_id, tensor_id FROM output_tensors ORDER BY operation_id").fetchall()
        assert outputs == [(ops[0][0], out.tensor_id), (ops[1][0], out.tensor_id)]
        buffers = con.execute("SELECT COUNT(*) FROM buffers WHERE operation_id = ? AND address = ?",
                              (ops[0][0], out.buffer_address())).fetchone()[0]
        assert buffers == 1  # no second buffer: the op wrote into the one it was given
        row = con.execute("SELECT address, shape FROM tensors WHERE tensor_id = ?", (out.tensor_id,)).fetchone()
        assert row == (out.buffer_address(), "Shape([2, 32, 64])")
    finally:
        con.close()


def test_the_public_signature_shows_the_output_keyword_the_op_takes():
    assert inspect.signature(ttnn.add).parameters["output_tensor"].default is None
    assert "optional_output_tensor" in inspect.signature(ttnn.matmul).parameters
    assert "output_tensor" not in inspect.signature(ttnn.reshape).parameters


@pytest.mark.parametrize("call", [
    lambda a, w, out: ttnn.linear(a, w, optional_output_tensor=out),
    lambda a, w, out: ttnn.matmul(a, w, optional_output_tensor=out),
])
def test_linear_and_matmul_write_what_they_would_return(device, call):
    a = dev(torch.randn(32, 64), device)
    w = dev(torch.randn(64, 32), device)
    out = dev(torch.zeros(32, 32), device)
    fresh = call(a, w, None)
    assert call(a, w, out) is out and torch.equal(out.to_torch(), fresh.to_torch())


def test_to_memory_config_and_typecast_write_into_the_given_tensor(device, ab):
    _, _, ta, _ = ab
    l1 = ttnn.from_torch(torch.zeros(2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                         memory_config=ttnn.L1)
    assert ttnn.to_memory_config(ta, ttnn.L1, output_tensor=l1) is l1
    assert torch.equal(l1.to_torch(), ta.to_torch()) and l1.memory_config() == ttnn.L1
    f32 = dev(torch.zeros(2, 32, 64), device, dtype=ttnn.float32)
    assert ttnn.typecast(ta, ttnn.float32, output_tensor=f32) is f32
    assert torch.equal(f32.to_torch(), ta.to_torch().float())


@pytest.fixture
def dtype_seeing_op():
    """An op that reports the output dtype it would compute for, registered for one test only."""
    from device_sim.ops.common import output, output_dtype, values

    seen = []

    def body(x, *, dtype=None):
        seen.append(output_dtype("test.dtype_seeing", dtype, x))
        return output(values(x), x, [x], op_name="test.dtype_seeing", dtype=dtype)

    try:
        yield ttnn.register_op("test.dtype_seeing", output_keyword="output_tensor")(body), seen
    finally:
        del ttnn.OPS["test.dtype_seeing"]


def test_an_op_can_ask_the_dtype_its_output_tensor_will_hold(device, dtype_seeing_op):
    op, seen = dtype_seeing_op
    x = dev(torch.randn(32, 32), device)
    op(x)
    op(x, dtype=ttnn.bfloat8_b)
    op(x, output_tensor=dev(torch.zeros(32, 32), device, dtype=ttnn.float32))
    assert seen == [ttnn.bfloat16, ttnn.bfloat8_b, ttnn.float32]


def test_on_a_mesh_each_chip_writes_into_its_shard_of_the_output_tensor():
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
    try:
        x = torch.randn(32, 64)
        put = lambda v: ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,  # noqa: E731
                                        mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=1))
        a, out = put(x), put(torch.zeros(32, 64))
        addresses = [s.buffer_address() for s in ttnn.get_device_tensors(out)]
        assert ttnn.add(a, a, output_tensor=out) is out
        assert [s.buffer_address() for s in ttnn.get_device_tensors(out)] == addresses
        joined = ttnn.to_torch(out, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=1))
        assert torch.equal(joined, x.bfloat16() * 2)
    finally:
        ttnn.close_mesh_device(mesh)

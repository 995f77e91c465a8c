"""Tensors on disk: plain .pt files any torch reads, device_sim's .bin, the size cap, load_tensor."""

import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import textwrap

import pytest
import torch

import device_sim as ttnn
import ttreport
from device_sim import serialization
from ttreport import Config, TensorFileError, load_tensor
from ttreport.storage import plain


def files(report) -> dict[int, str]:
    con = sqlite3.connect(report.db_path)
    try:
        return dict(con.execute("SELECT tensor_id, file FROM tensors"))
    finally:
        con.close()


def metadata(report) -> dict[str, str]:
    con = sqlite3.connect(report.db_path)
    try:
        return dict(con.execute("SELECT key, value FROM report_metadata"))
    finally:
        con.close()


def small_model(device, weight):
    x = ttnn.from_torch(torch.randn(2, 40, 50), layout=ttnn.TILE, device=device, memory=ttnn.L1)  # padded in tiles
    y = ttnn.mul(x, weight)
    return [x, y, ttnn.exp(y), ttnn.reshape(y, (80, 50))]


@pytest.fixture
def weight(device):
    return ttnn.from_torch(torch.randn(40, 50), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)


def test_pt_files_load_where_neither_device_sim_nor_ttreport_can_be_imported(tmp_path, device, weight):
    with ttreport.capture(tmp_path / "r", config=Config(tensors="all")) as report:
        outs = small_model(device, weight)
    expected = {t.tensor_id: t.value for t in [weight, *outs]}
    assert files(report) == {tid: f"tensors/{tid}.pt" for tid in expected}
    assert not list((report.path / "tensors").glob(".*"))  # no temporary files left behind

    moved = shutil.copytree(report.path, tmp_path / "elsewhere" / "copy")
    shutil.rmtree(report.path)
    torch.save(expected, tmp_path / "expected.pt")
    # -S: no site-packages .pth files, so the editable install of this repo is not importable either.
    script = textwrap.dedent(f"""
        import sys
        sys.path.append({sysconfig.get_paths()["purelib"]!r})
        import torch
        for name in ("device_sim", "ttreport"):
            try:
                __import__(name)
            except ImportError:
                pass
            else:
                raise SystemExit(name + " is importable")
        expected = torch.load({str(tmp_path / "expected.pt")!r}, weights_only=True)
        for tid, want in expected.items():
            got = torch.load({str(moved)!r} + f"/tensors/{{tid}}.pt", weights_only=True)
            assert type(got) is torch.Tensor and got.device.type == "cpu" and not got.requires_grad
            assert got.is_contiguous() and got.dtype == want.dtype and got.shape == want.shape, tid
            assert torch.equal(got, want), tid
        print("ok", len(expected))
    """)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", str(len(expected))]


def test_block_float_values_are_saved_exactly_as_bfloat16(tmp_path, device, weight):
    with ttreport.capture(tmp_path / "r", config=Config(tensors="all")) as report:
        y = ttnn.neg(weight)
    stored = load_tensor(report.path, weight.tensor_id)
    assert stored.dtype == torch.bfloat16 and torch.equal(stored, weight.value)
    assert torch.equal(load_tensor(report.path, y.tensor_id), y.value)
    con = sqlite3.connect(report.db_path)
    assert con.execute("SELECT dtype FROM tensors WHERE tensor_id = ?", (weight.tensor_id,)).fetchone() == \
        ("DataType.BFLOAT8_B",)


def test_outputs_mode_stores_outputs_once_and_not_inputs_made_before(tmp_path, device, weight):
    with ttreport.capture(tmp_path / "r", config=Config(tensors="outputs")) as report:
        y = ttnn.exp(weight)
        same = ttnn.to_layout(y, ttnn.TILE)  # returns its input: one tensor, one file
        ttnn.add(y, y)
    assert same is y
    stored = {tid: f for tid, f in files(report).items() if f is not None}
    assert weight.tensor_id not in stored and y.tensor_id in stored and len(stored) == 2
    assert len(list((report.path / "tensors").iterdir())) == 2


def test_reaching_the_cap_warns_notes_it_and_the_run_goes_on(tmp_path, device):
    a = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device)  # 4 KiB of float32 values
    cfg = Config(tensors="outputs", max_tensor_bytes=3 * 4096)
    with pytest.warns(ttreport.ReportIncompleteWarning, match="max_tensor_bytes=12288") as warned, \
            ttreport.capture(tmp_path / "r", config=cfg) as report:
        outs = [ttnn.neg(a) for _ in range(5)]
    # It names the user's line that ran the op, whichever path (C or Python) called the hook.
    assert [(w.filename, w.lineno) for w in warned] == [(__file__, sys._getframe().f_lineno - 2)]
    assert report.status == "complete"
    stored = [tid for tid, f in files(report).items() if f is not None]
    assert stored == [t.tensor_id for t in outs[:3]]
    meta = metadata(report)
    assert (meta["tensors_skipped"], meta["tensor_bytes_skipped"]) == ("2", str(2 * 4096))
    with pytest.raises(TensorFileError, match=f"tensor {outs[4].tensor_id} has no stored file"):
        load_tensor(report.path, outs[4].tensor_id)


def test_bin_mode_writes_device_sims_portable_format(tmp_path, device, weight):
    with ttreport.capture(tmp_path / "r", config=Config(tensors="all", detach_saved_tensors=False)) as report:
        x, y, *_ = small_model(device, weight)
    assert files(report)[x.tensor_id] == f"tensors/{x.tensor_id}.bin"
    for t in (weight, x, y):
        assert torch.equal(load_tensor(report.path, t.tensor_id), t.value)
    back = serialization.load_tensor(report.path / "tensors" / f"{x.tensor_id}.bin")
    assert (back.dtype, back.layout, back.memory_config()) == (x.dtype, x.layout, None)
    on_device = serialization.load_tensor(report.path / "tensors" / f"{x.tensor_id}.bin", device=device)
    assert on_device.memory_config() == ttnn.L1
    assert not list((report.path / "tensors").glob(".*"))


def test_a_view_is_saved_without_the_storage_it_views():
    big = torch.arange(1 << 16, dtype=torch.float32)
    view = big[10:20]
    saved = plain(view)
    assert torch.equal(saved, view) and saved.untyped_storage().nbytes() == 40
    whole = torch.arange(10, dtype=torch.float32)
    assert plain(whole) is not None and plain(whole).data_ptr() == whole.data_ptr()  # no copy when not needed


def test_damaged_or_foreign_files_are_a_clear_error(tmp_path):
    (tmp_path / "tensors").mkdir()
    (tmp_path / "tensors" / "1.pt").write_bytes(b"not a zip")
    with pytest.raises(TensorFileError, match=r"1.pt cannot be read .*damaged"):
        load_tensor(tmp_path, 1)
    torch.save({"a": torch.ones(1)}, tmp_path / "tensors" / "2.pt")
    with pytest.raises(TensorFileError, match="holds a dict"):
        load_tensor(tmp_path, 2)
    (tmp_path / "tensors" / "3.bin").write_bytes(b"\x89TTSIM\r\n" + b"\0" * 3)
    with pytest.raises(TensorFileError, match="3.bin cannot be read"):
        load_tensor(tmp_path, 3)


def test_an_unwritable_tensor_folder_warns_clears_the_rows_and_the_run_goes_on(tmp_path, device, weight):
    with pytest.warns(ttreport.ReportIncompleteWarning, match="could not write tensor file"), \
            ttreport.capture(tmp_path / "r", config=Config(tensors="outputs")) as report:
        (report.path / "tensors").write_text("a file where the folder should be")
        outs = [ttnn.neg(weight) for _ in range(3)]
    assert report.status == "complete"
    assert all(files(report)[t.tensor_id] is None for t in outs)  # rows say: not stored
    meta = metadata(report)
    assert meta["tensor_files_lost"] == "3" and "FileExistsError" in meta["tensor_file_error"]

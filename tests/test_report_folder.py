"""A report folder (ttreport/folder.py): what the first reader after a killed capture deletes, and what it leaves.

    .venv/bin/python -m pytest tests/test_report_folder.py -q
"""

import shutil
import subprocess
import sys
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"


def test_the_first_reader_after_a_killed_capture_deletes_its_half_written_tensor_files_only(tmp_path):
    report = tmp_path / "r"
    shutil.copytree(SAMPLE, report)
    (report / ".lock").write_text("999999999\n")  # the lock file a killed capture leaves (nobody holds it)
    (report / "oplog.done").mkdir()  # a killed writer process's finished log: the reader's recovery runs
    tensors = report / "tensors"
    finished = sorted(tensors.glob("*.pt"))[0]
    half = [tensors / f".{finished.name}.tmp", tensors / f".{finished.name}.k3_9xq2a.tmp", tensors / ".7.bin.tmp"]
    for path in half:
        path.write_bytes(b"PK\x03\x04 torn")
    (tensors / "4").mkdir(exist_ok=True)  # a mesh tensor's shards
    (tensors / "4" / ".0.pt.tmp").write_bytes(b"torn")
    mine = [tensors / "notes.tmp", tensors / ".notes.pt.tmp", report / "mine.tmp"]  # not a capture's names
    for path in mine:
        path.write_text("kept")
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "summary", str(report)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not [p for p in half if p.exists()] and not (tensors / "4" / ".0.pt.tmp").exists()
    assert finished.is_file() and all(p.read_text() == "kept" for p in mine)
    assert not (report / "oplog.done").exists()


def test_a_reader_leaves_the_half_written_files_of_a_capture_that_holds_the_folder(tmp_path):
    report = tmp_path / "r"
    shutil.copytree(SAMPLE, report)
    (report / "oplog.done").mkdir()
    half = report / "tensors" / ".5.pt.tmp"
    half.write_bytes(b"being written")
    # A capture holding the folder's lock, in a process of its own (flock is per open file, not per process).
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | "
                               "os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); "
                               "sys.stdin.read()", str(report / ".lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        done = subprocess.run([sys.executable, "-m", "ttreport.cli", "summary", str(report)], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert half.read_bytes() == b"being written" and (report / "oplog.done").is_dir()
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)

"""What a capture keeps in memory per tensor is bounded: a run making millions of tensors does not grow
the recorder's or the writer's bookkeeping past a fixed number of entries.

The bounds are lowered for the test (1000 instead of 65,536) so that a few thousand ops cross them
several times; what is checked is the count of entries, not a timing, and that the report is whole.
"""

from types import SimpleNamespace

import torch

import device_sim as ttnn
import ttreport
from ttreport.capturing import recorder, records, writer


def test_the_ids_kept_per_tensor_stay_bounded_and_the_report_stays_whole(tmp_path, device, monkeypatch):
    monkeypatch.setattr(recorder, "MAX_SEEN", 1000)
    monkeypatch.setattr(writer, "MAX_SPEC_OF", 1000)
    w = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device)  # used all run long
    with ttreport.capture(tmp_path / "r") as cap:  # the recorder's ids are read here; the writer's: below
        a = ttnn.from_torch(torch.zeros(32, 32), layout=ttnn.TILE, device=device)
        most = 0
        for i in range(6000):
            a = a + w
            if i % 1000 == 999:
                y = ttnn.concat([a, w], dim=0)  # tensors inside a list argument: the writer's spec_of
                most = max(most, len(cap.recorder._seen))
        cap.flush()
        assert most <= 1000 and len(cap.recorder._seen) <= 1000
    assert y.shape[0] == 64 and a.to_torch()[0, 0].item() == 6000
    with ttreport.open(cap.path) as r:
        assert r.count_operations() == 6007  # from_torch, 6000 adds, 6 concats
        n_tensors = r.sql("SELECT COUNT(*) AS n, COUNT(DISTINCT tensor_id) AS d FROM tensors")[0]
        assert n_tensors["n"] == n_tensors["d"] == 6000 + 6 + 2  # each tensor once: w, a, adds, concats
        assert r.tensor(w.tensor_id).producer is None  # w's first row (seen as an input) is kept
        last = r.operations("concat")[-1]
        assert [t.id for t in last.input_tensors] == [a.tensor_id, w.tensor_id]
        assert f"ttnn.Tensor(id={w.tensor_id}, shape=Shape([32, 32])" in dict(last.arguments)["0"]
    assert ttreport.check(cap.path) == []


def test_the_writers_spec_texts_per_tensor_stay_bounded(tmp_path, monkeypatch):
    # The writer runs in the writer process; its bookkeeping is the Writer's own, read here on one in this process.
    monkeypatch.setattr(writer, "MAX_SPEC_OF", 1000)
    w = writer.Writer(tmp_path / "db.sqlite", None, SimpleNamespace(buffer_pages=False, device_graphs=False))
    rows = {"tensor_specs": []}
    for tid in range(1, 6001):
        spec = records.Spec(tid, (32, 32), 0, 1, None, "default", None, None, None, None, None)
        w._tensor_row(tuple(spec), None, rows, [])
        assert len(w._spec_of) <= 1000
    assert len(rows["tensor_specs"]) == 1  # one spec text for all of them

"""How tests/data/report_v0003 was made: ttreport at revision 0003 (`git archive 4b61615^ ttreport device_sim
migrations`, with migrations/ copied to ttreport/migrations) first on PYTHONPATH, then

    PYTHONPATH=<that tree> python tests/data/make_v0003_report.py /tmp/r
    cp /tmp/r/db.sqlite tests/data/report_v0003/

Schema 0003 is the one whose `tensors` and `operation_arguments` are views over compact tables. Six ops
(two from_torch, a matmul into L1, a relu, a deallocate, to_torch), the middle three called from a function.
"""
import sys
from pathlib import Path

import torch

import device_sim as ttnn
import ttreport
import ttreport.db

assert ttreport.db.head_revision() == "0003", "run with ttreport at revision 0003 first on PYTHONPATH"
out = Path(sys.argv[1])


def block(x, w):
    h = ttnn.matmul(x, w, memory_config=ttnn.L1_MEMORY_CONFIG)
    r = ttnn.relu(h)
    ttnn.deallocate(h)
    return r


device = ttnn.open_device(device_id=0)
torch.manual_seed(0)
with ttreport.capture(out):
    x = ttnn.from_torch(torch.randn(1, 1, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    w = ttnn.from_torch(torch.randn(1, 1, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    r = block(x, w)
    y = ttnn.to_torch(r)
ttnn.close_device(device)

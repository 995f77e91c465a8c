"""A TT-NN script in the style of tt-metal's ttnn_tracer_model tutorial, run by tests/test_tracer.py.

    TTNN_CONFIG_OVERRIDES='{"enable_fast_runtime_mode": false}' ttreport run tests/data/tracer_script.py graph.dot

It traces torch -> ttnn -> torch, saves the drawing's DOT source to argv[1] and prints each traced
ttnn op as `traced <name> <operation_id>`, to be matched against the report's operations.
"""

import sys

import torch
import ttnn
from ttnn.tracer import get_graph, trace, visualize

device = ttnn.open_device(device_id=0)

with trace():
    # A torch tensor made in the trace, moved to the device and back.
    tensor = torch.randint(0, 10, (4, 64), dtype=torch.int32).to(torch.bfloat16)
    tensor = ttnn.from_torch(tensor, device=device)
    tensor = ttnn.to_layout(tensor, ttnn.TILE_LAYOUT)
    tensor = ttnn.exp(tensor)
    tensor = ttnn.reshape(tensor, (2, 4, 32))
    tensor = ttnn.to_torch(tensor)
    total = tensor.sum()

visualize(total, file_name=sys.argv[1])
for _, data in sorted(get_graph(total).nodes(data=True)):
    if isinstance(data["operation"], ttnn.tracer.TTNNOperation):
        print("traced", data["operation"].pretty_name, data.get("operation_id"))

ttnn.close_device(device)

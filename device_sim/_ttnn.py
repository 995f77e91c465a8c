"""`ttnn._ttnn`: the name of TT-NN's compiled module, whose submodules scripts and tests reach through it
(`ttnn._ttnn.reports.get_buffer_pages(device)`, `ttnn._ttnn.multi_device.SystemMeshDescriptor()`).

Each is device_sim's module for the same thing:

    import device_sim as ttnn
    ttnn._ttnn.cluster.get_cluster_type()        # device_sim.cluster
"""

from device_sim import cluster, device, reports
from device_sim import mesh as multi_device

__all__ = ["cluster", "device", "multi_device", "reports"]

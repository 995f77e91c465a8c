"""`ttnn.graph_tracer_utils`: a captured graph's argument strings as a JSON document (TT-NN's GraphTracerUtils).

    GraphTracerUtils.serialize_graph(ttnn.graph.end_graph_capture())
    # {"content": [{"operation": "MatmulDeviceOperation", "arguments": [{"arg0": ...}, ...]}, ...]}

One entry per node that has arguments, in graph order. TT-NN parses each C++ argument string
(`MemoryConfig(memory_layout=...)`) into nested JSON with a chain of regexes; device_sim's graph nodes carry
no C++ argument strings (device_sim/graph.py), so its graphs serialize to an empty content list, and an
argument string from a TT-NN graph is kept whole as `{"argN": text}`.
"""

from __future__ import annotations


class GraphTracerUtils:
    @staticmethod
    def serialize_arguments_to_json(operation_name: str, arguments: list) -> dict | None:
        if operation_name == "":
            return None
        return {"operation": operation_name, "arguments": [{f"arg{i}": a} for i, a in enumerate(arguments)]}

    @staticmethod
    def serialize_graph(captured_graph: list) -> dict:
        content = []
        for node in captured_graph:
            if node["arguments"]:
                content.append(GraphTracerUtils.serialize_arguments_to_json(node["params"].get("name", ""),
                                                                            node["arguments"]))
        return {"content": content}

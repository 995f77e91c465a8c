"""`ttnn.graph_tracer_utils`: a captured graph's argument strings as a JSON document (TT-NN's GraphTracerUtils).

    GraphTracerUtils.serialize_graph(ttnn.graph.end_graph_capture())
    # {"content": [{"operation": "MorehDotOperation", "arguments": [{"arg0": ...}, {"arg1": ...}]}, ...]}

One entry per node that has arguments, in graph order. Each C++ argument string (`MemoryConfig(memory_layout=...)`,
device_sim/graph.py writes them as TT-NN does) is turned into nested JSON by TT-NN's chain of text rewrites
(ttnn/ttnn/graph_tracer_utils.py at peer/TT_METAL_COMMIT), step for step, so that a string it cannot parse stays
`{"UnparsedElement": {"error": ..., "element_info": ...}}` here as there.
"""

from __future__ import annotations

import json
import re

_NAME = r"\b[a-zA-Z_][a-zA-Z0-9_]*(?:__\w*)*"
# The rewrites before the text is wrapped as {"argN": ...}, in TT-NN's order; `::` is hidden as ~~~ meanwhile.
_REWRITES = (
    (r"::", "~~~"),
    (r"(\b[a-zA-Z_][a-zA-Z0-9_]*(?:~~~\w*)*)=", r'"\1":'),  # key=  ->  "key":
    (r"(:\s*)(\b[a-zA-Z_][a-zA-Z0-9_~]*(?:__\w*)*)(?=[,}\)\s])", r'\1"\2"'),  # a bare identifier value, quoted
    (r"\(", "{"),
    (r"\)", "}"),
    (rf"^({_NAME})\s*{{", r'"\1":{'),  # the first type name becomes a key
    (r"(\w+){", "{"),  # every other type name before a brace is dropped
    (rf"({_NAME})\s*{{", r'"\1":{'),
    (r"~~~", "::"),
    (r"{\s*(\[[^]]*\])\s*}", r"\1"),  # Shape{[1, 2]}  ->  [1, 2]
    (r"(:\s*)\{(\s*\d+(?:\s*,\s*\d+)*\s*)\}", r'\1"{\2}"'),  # {32, 32}  ->  "{32, 32}"
    (r"[\x00-\x1F]", lambda m: f"\\u{ord(m.group(0)):04X}"),
)
# ... and after it: quoted arrays unquoted, optional and unsupported-type arrays made values
_AFTER_WRAP = (
    (r'("arg\d+"\s*:\s*)"(\[.*?\])"', r"\1\2"),
    (r"(\[\s*)<nullopt>(\s*\])", r'"<nullopt>"'),
    (r"\[\s*unsupported\s+type\s*,\s*([^]]+)\s*\]", r'{"unsupported type": "\1"}'),
    (r'("arg\d+"\s*:\s*)\[\s*unsupported type\s*,\s*([^]]+?)\s*\]', r'\1{"unsupported type": "\2"}'),
)


def _to_json(text: str, index: int):
    for pattern, replacement in _REWRITES:
        text = re.sub(pattern, replacement, text)
    body = text.strip()
    text = f'{{"arg{index}": ' + (f"{{{body}}}" if re.match(r'^"\w+"\s*:', body) else f'"{text}"') + "}"
    for pattern, replacement in _AFTER_WRAP:
        text = re.sub(pattern, replacement, text)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        return {"UnparsedElement": {"error": e, "element_info": text}}


class GraphTracerUtils:
    @staticmethod
    def serialize_arguments_to_json(operation_name: str, arguments: list) -> dict | None:
        if operation_name == "":
            return None
        return {"operation": operation_name, "arguments": [_to_json(a, i) for i, a in enumerate(arguments)]}

    @staticmethod
    def serialize_graph(captured_graph: list) -> dict:
        content = []
        for node in captured_graph:
            if node["arguments"]:
                content.append(GraphTracerUtils.serialize_arguments_to_json(node["params"].get("name", ""),
                                                                            node["arguments"]))
        return {"content": content}

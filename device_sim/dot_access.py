"""`ttnn.dot_access`: a dict whose keys read as attributes, as TT-NN's (tt-metal a8c5af0f ttnn/dot_access.py).

    from ttnn.dot_access import make_dot_access_dict
    config = make_dot_access_dict({"attention": {"heads": 12}})
    config.attention.heads                                  # 12

Model code imports it by this path (models/demos/bert/tt/ttnn_optimized_sharded_bert.py). A missing key raises
KeyError, as TT-NN's does (its __getattr__ is dict.__getitem__).
"""

from __future__ import annotations


class DotAccessDict(dict):
    __getattr__ = dict.__getitem__
    __delattr__ = dict.__delitem__


def make_dot_access_dict(dictionary: dict, *, ignore_types=None) -> DotAccessDict:
    """`dictionary` and every dict inside it as DotAccessDicts; a value of one of `ignore_types` is kept as it is."""
    if isinstance(dictionary, DotAccessDict):
        return dictionary
    if ignore_types is not None and isinstance(dictionary, ignore_types):
        return dictionary
    return DotAccessDict({key: make_dot_access_dict(value, ignore_types=ignore_types) if isinstance(value, dict)
                          else value for key, value in dictionary.items()})


__all__ = ["DotAccessDict", "make_dot_access_dict"]

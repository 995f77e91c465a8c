"""A sharded tensor's memory_config, as a fresh report stores it and as ttnn-visualizer 0.108 reads it.

The report stores the text TT-NN 0.81 writes for the same tensor (docs/shard_spec_text.md has the sources):
MemoryConfig and ShardSpec printed by tt_stl's reflection (`Name(a=v,b=v)`), ShardSpec's fields being grid,
shape and orientation, and the NdShardSpec a tensor's TensorSpec derives from it printed in TT-NN's JSON-like
form. The strings below are written out by hand from that format, not made by device_sim.

ttnn-visualizer 0.108's server-side parser (`ttnn_visualizer.utils.parse_memory_config`) reads a shard spec
only in the older `...,halo=N)` form, so for TT-NN 0.81's text it gives shard_spec "std::nullopt", for a real
TT-NN report as for ours: the parity test holds the visualizer's view of our tensor equal to its view of
TT-NN's text, layouts included. Its web page reads a memory_config *argument* with a looser regex (taken
from its bundle here), which finds grid, shape and orientation in ours. `ttreport tensor` and the HTML say
the shard spec in words.

    .venv/bin/python -m pytest tests/test_visualizer_shard_spec.py -q
"""

import re
import sqlite3
from pathlib import Path

import pytest
import torch
import ttnn_visualizer
from click.testing import CliRunner
from ttnn_visualizer.utils import parse_memory_config

import device_sim as ttnn
import ttreport
from ttreport.cli import main


def _nd(shard_shape: list, x1: int, y1: int) -> str:
    """An NdShardSpec over one core range from (0, 0), as TT-NN's operator<< prints it (ttnn/core/tensor/types.cpp)."""
    return (f'{{"shard_shape":{shard_shape},"grid":[{{"start":{{"x":0,"y":0}},"end":{{"x":{x1},"y":{y1}}}}}],'
            '"orientation":"ShardOrientation::ROW_MAJOR",'
            '"shard_distribution_strategy":"ShardDistributionStrategy::ROUND_ROBIN_1D"}')


def _tt_nn(layout: str, buffer: str, shard: str, nd: str) -> str:
    return (f"MemoryConfig(memory_layout=TensorMemoryLayout::{layout},buffer_type=BufferType::{buffer},"
            f"shard_spec={shard},nd_shard_spec={nd},created_with_nd_shard_spec=0)")


def _shard(x1: int, y1: int, h: int, w: int) -> str:
    return (f"ShardSpec(grid={{[(x=0,y=0) - (x={x1},y={y1})]}},shape={{{h}, {w}}},"
            "orientation=ShardOrientation::ROW_MAJOR)")


# What TT-NN 0.81 writes for each tensor the fixture places (torch shape, layout -> text).
TT_NN_TEXT = {
    "INTERLEAVED": _tt_nn("INTERLEAVED", "L1", "std::nullopt", "std::nullopt"),
    # 64x64 over 2 cores in a column: one 32x64 shard each
    "HEIGHT_SHARDED": _tt_nn("HEIGHT_SHARDED", "L1", _shard(0, 1, 32, 64), _nd([32, 64], 0, 1)),
    # 32x128 over 4 cores in a row: one 32x32 shard each (the NdShardSpec keeps the full height)
    "WIDTH_SHARDED": _tt_nn("WIDTH_SHARDED", "L1", _shard(3, 0, 32, 32), _nd([32, 32], 3, 0)),
    # 64x128 over a 4x2 block: 32x32 shards
    "BLOCK_SHARDED": _tt_nn("BLOCK_SHARDED", "L1", _shard(3, 1, 32, 32), _nd([32, 32], 3, 1)),
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple:
    """The report and the memory_config text it stores for an L1 tensor of each layout."""
    device = ttnn.open_device(device_id=0)
    try:
        with ttreport.capture(tmp_path_factory.mktemp("shards") / "r") as cap:
            def place(shape, config):
                x = ttnn.from_torch(torch.randn(*shape), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
                return ttnn.to_memory_config(x, config)

            place((64, 64), ttnn.L1_MEMORY_CONFIG)
            place((64, 64), ttnn.create_sharded_memory_config((64, 64), ttnn.CoreGrid(y=2, x=1),
                                                              ttnn.ShardStrategy.HEIGHT))
            place((32, 128), ttnn.create_sharded_memory_config((32, 128), ttnn.CoreGrid(y=1, x=4),
                                                               ttnn.ShardStrategy.WIDTH))
            place((64, 128), ttnn.create_sharded_memory_config((64, 128), ttnn.CoreGrid(y=2, x=4),
                                                               ttnn.ShardStrategy.BLOCK))
    finally:
        ttnn.close_device(device)
    with sqlite3.connect(cap.db_path) as con:
        rows = con.execute("SELECT t.tensor_id, t.memory_config FROM tensors t JOIN output_tensors o USING (tensor_id) "
                           "JOIN operations p USING (operation_id) WHERE p.name = 'ttnn.to_memory_config' "
                           "ORDER BY t.tensor_id").fetchall()
    by_layout = {parse_memory_config(text)["memory_layout"].removeprefix("TensorMemoryLayout::"): (tid, text)
                 for tid, text in rows}
    return cap.path, by_layout


@pytest.mark.parametrize("layout", list(TT_NN_TEXT))
def test_a_tensors_memory_config_is_stored_as_tt_nn_writes_it(stored, layout):
    assert stored[1][layout][1] == TT_NN_TEXT[layout]


@pytest.mark.parametrize("layout", list(TT_NN_TEXT))
def test_the_visualizer_reads_our_tensor_as_it_reads_tt_nns(stored, layout):
    ours = parse_memory_config(stored[1][layout][1])
    assert ours == parse_memory_config(TT_NN_TEXT[layout])
    assert ours["memory_layout"] == f"TensorMemoryLayout::{layout}"


def test_the_visualizers_parser_reads_a_shard_spec_only_in_the_older_halo_form():
    # Why the parity above shows shard_spec std::nullopt: the same spec in the form TT-NN printed before its
    # ShardSpec lost halo (and MemoryConfig gained nd_shard_spec) is read in full.
    older = ("MemoryConfig(memory_layout=TensorMemoryLayout::HEIGHT_SHARDED,buffer_type=BufferType::L1,"
             "shard_spec=ShardSpec(grid={[(x=0,y=0) - (x=0,y=1)]},shape={32, 64},"
             "orientation=ShardOrientation::ROW_MAJOR,halo=0))")
    spec = parse_memory_config(older)["shard_spec"]
    assert (spec["grid"], spec["shape"], spec["orientation"]) == ("[(x=0,y=0) - (x=0,y=1)]", [32, 64], "ROW_MAJOR")
    assert parse_memory_config(TT_NN_TEXT["HEIGHT_SHARDED"])["shard_spec"] == "std::nullopt"


def _page_shard_spec_pattern() -> re.Pattern:
    """The regex ttnn-visualizer's web page reads a memory_config argument's shard spec with, from its bundle."""
    bundle = next((Path(ttnn_visualizer.__file__).parent / "static" / "assets").glob("index-*.js")).read_text()
    return re.compile(re.search(r"=/(shard_spec=ShardSpec\\\(.*?)/,", bundle).group(1))


def test_the_visualizers_page_reads_grid_shape_and_orientation_from_a_sharded_argument(stored):
    path, _ = stored
    with sqlite3.connect(path / "db.sqlite") as con:
        (text,) = con.execute("SELECT value FROM operation_arguments WHERE value LIKE 'MemoryConfig(%BLOCK_SHARDED%'"
                              ).fetchone()
    assert ",nd_shard_spec=std::nullopt," in text  # an argument is the config the user passed
    grid, h, w, orientation = _page_shard_spec_pattern().search(text).groups()[:4]
    assert (grid, h, w, orientation) == ("[(x=0,y=0) - (x=3,y=1)]", "32", "32", "ROW_MAJOR")


def test_ttreport_tensor_says_the_shard_spec_in_words(stored):
    path, by_layout = stored
    out = CliRunner().invoke(main, ["tensor", str(path), str(by_layout["BLOCK_SHARDED"][0])])
    assert out.exit_code == 0, out.output
    assert "L1 BLOCK_SHARDED, shards of 32x32 on 8 cores {[(x=0,y=0) - (x=3,y=1)]}, ROW_MAJOR" in out.output


def test_the_html_export_says_the_shard_spec_in_words(stored, tmp_path):
    path, _ = stored
    with ttreport.open(path) as r:
        r.export_html(tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "L1 HEIGHT_SHARDED, shards of 32x64 on 2 cores {[(x=0,y=0) - (x=0,y=1)]}, ROW_MAJOR" in page

"""What running tt-metal's own model tests unchanged (peer/models.py) taught device_sim, in our own small words.

    .venv/bin/python -m pytest tests/test_model_runs.py

Each test is a call tt-metal's model code makes at peer/TT_METAL_COMMIT, reproduced without the tt-metal
checkout: the Whisper and tt_transformers files themselves are not needed here.
"""

from __future__ import annotations

import torch

import device_sim as ttnn
from device_sim.model_preprocessing import preprocess_linear_bias, preprocess_linear_weight


def test_linear_preprocessors_place_weights_on_a_mesh_through_weights_mesh_mapper():
    # Whisper's create_custom_mesh_preprocessor(weights_mesh_mapper) passes the mapper to both preprocessors.
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    try:
        mapper = ttnn.ReplicateTensorToMesh(mesh)
        weight, bias = torch.randn(96, 64), torch.randn(96)
        w = ttnn.to_device(preprocess_linear_weight(weight, dtype=ttnn.bfloat16, weights_mesh_mapper=mapper), mesh)
        b = ttnn.to_device(preprocess_linear_bias(bias, dtype=ttnn.bfloat16, weights_mesh_mapper=mapper), mesh)
        for chip_w, chip_b in zip(ttnn.get_device_tensors(w), ttnn.get_device_tensors(b), strict=True):
            assert torch.equal(chip_w.to_torch(), weight.T.to(torch.bfloat16))
            assert torch.equal(chip_b.to_torch(), bias.reshape(1, -1).to(torch.bfloat16))
        assert len(ttnn.get_device_tensors(w)) == 2
    finally:
        ttnn.close_mesh_device(mesh)


def test_nlp_create_qkv_heads_with_zero_kv_heads_splits_every_column_into_query_heads(device):
    # Whisper's cross-attention: K and V each split apart with num_kv_heads=0, taking [0]; 0 is not "the default".
    x = torch.randn(1, 1, 32, 20 * 64)
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    q, k, v = ttnn.experimental.nlp_create_qkv_heads(t, num_heads=20, num_kv_heads=0,
                                                     memory_config=ttnn.DRAM_MEMORY_CONFIG)
    assert tuple(q.shape) == (1, 20, 32, 64)
    assert torch.equal(q.to_torch(), x.to(torch.bfloat16).reshape(1, 32, 20, 64).transpose(1, 2))
    assert tuple(k.shape)[1] == 0 and tuple(v.shape)[1] == 0


def test_a_batched_matmul_too_big_for_one_core_a_matrix_falls_back_to_the_multicast_grid(device):
    # Whisper's encoder self-attention, query @ key for 20 heads of 1500 positions, no program config: one
    # 47x47-tile output a core wants ~5 MB of CBs, so TT-NN takes create_simple_matmul_program_config instead.
    q = ttnn.from_torch(torch.randn(1, 20, 1500, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    k = ttnn.from_torch(torch.randn(1, 20, 64, 1500), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    scores = q @ k
    want = q.to_torch().float() @ k.to_torch().float()
    assert tuple(scores.shape) == (1, 20, 1500, 1500)
    assert torch.corrcoef(torch.stack([scores.to_torch().float().flatten(), want.flatten()]))[0, 1] > 0.9999


def test_sharded_to_interleaved_returns_an_interleaved_input_as_it_is(device):
    # Whisper's preprocess_encoder_inputs calls it on conv1d's output whatever that output's memory is.
    t = ttnn.from_torch(torch.randn(1, 1, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.sharded_to_interleaved(t) is t

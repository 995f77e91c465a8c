#!/usr/bin/env bash
# Lay out the parts of tt-metal that `make peer` needs, at the pinned commit, from a git directory holding it.
#
#   peer/fetch_tt_metal.sh /path/to/tt-metal.git [generated/tt-metal]
#
# The git directory may be a clone of tenstorrent/tt-metal or of a fork that has the commit in
# peer/TT_METAL_COMMIT (a bare one works). Only what the tests import is laid out (about 70 MB): the test
# files, their helpers (models/common, tests/scripts, tests/tt_eager's comparison functions, which are links
# into ttnn/tt_lib) and TT-NN's Python and C++ op sources, read for signatures and defaults; and for `peer/models.py` the
# tt_transformers package, Whisper's Python files (not its .wav data, ~7 MB) and ttnn/tutorials. The folder gets a
# .tt_metal_commit stamp, which peer/run.py checks against peer/TT_METAL_COMMIT. models/demos/bert/tt and
# models/experimental/functional_common are there because tests/ttnn/python_api_testing/sweep_tests/ttnn_ops.py
# imports them (it imports IPython and transformers too), and 6 eltwise unit tests import it (test_eltwise_sqrt.py ...).
# tools/tracy is the `tracy` package tt-metal's setup.py installs, whose signpost 32 tests/ttnn files import.
# models/experimental/panoptic_deeplab (its tests/pcc/common.py and tt/common.py) and models/tt_cnn (which tt/
# imports) are there because nightly conv/test_conv2d.py imports them, and unit conv/test_conv2d.py imports that;
# models/demos/deepseek_v3_d_p's reference/ and tt/ because unit deepseek/test_deepseek_moe_post_combine_reduce.py
# and test_zero_cache_range.py import them; models/experimental/ops (tt-metal's fused Parallel/Sequential API, pure
# Python that merges ops' C++ kernels into one program) because the 5 unit fused/parallel_sequential files import it.
# models/experimental/openpdn_mnist (its reference and ttnn model, random weights) for integration_tests/openpdn_mnist;
# models/demos/bert/reference for integration_tests/bert's 3 files that import it (their cases then skip on Wormhole,
# as the tests say, instead of failing to import).
# models/demos/metal_BERT_large_11/tt because tests/tt_eager's sweep_tests/tt_lib_ops.py imports its custom_matmuls
# (nightly matmul/test_bert_matmuls.py imports tt_lib_ops).
set -euo pipefail
git_dir=${1:?usage: peer/fetch_tt_metal.sh GIT_DIR [DEST]}
dest=${2:-generated/tt-metal}
commit=$(cat "$(dirname "$0")/TT_METAL_COMMIT")
git --git-dir="$git_dir" cat-file -e "$commit^{commit}" || { echo "$git_dir has no commit $commit" >&2; exit 1; }
mkdir -p "$dest"
for path in conftest.py pytest.ini tests/__init__.py tests/ttnn tests/scripts tests/tests_common tests/tt_eager \
            tests/sweep_framework models/common models/perf models/demos/deepseek_v3/utils ttnn/ttnn ttnn/tt_lib \
            ttnn/cpp/ttnn/operations models/tt_transformers models/demos/audio/whisper/tt \
            models/demos/audio/whisper/tests models/demos/audio/whisper/demo/demo.py models/demos/utils models/demos/bert/tt \
            models/experimental/functional_common tools/tracy models/experimental/panoptic_deeplab models/tt_cnn \
            models/demos/deepseek_v3_d_p/reference models/demos/deepseek_v3_d_p/tt \
            models/experimental/ops models/sample_data/huggingface_imagenet_classes.py ttnn/tutorials \
            models/experimental/openpdn_mnist models/demos/bert/reference models/demos/metal_BERT_large_11/tt; do
  git --git-dir="$git_dir" archive "$commit" "$path" | tar -x -C "$dest"
done
echo "$commit" > "$dest/.tt_metal_commit"
echo "tt-metal $commit laid out in $dest"

# make demo / make test create .venv when missing, install the CPU torch build first, then the project.
PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench stress clean visualizer-check peer peer-models

$(STAMP): pyproject.toml setup.py $(wildcard device_sim/*.c ttreport/*.c ttreport/*/*.c ttreport/capturing/records.py)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ttreport demo

# TT-NN's own importer, ttnn/graph_report.py, that the differential tests load (tests/graph_report_wheel.py): the ttnn
# 0.81.1 wheel, downloaded once and never installed (102 MB; it is built for manylinux_2_34 and CPython 3.10 only,
# hence the flags). Where it cannot be had, those tests skip, naming this command.
TTNN_WHEEL := generated/ttnn-wheel/ttnn-0.81.1-cp310-cp310-manylinux_2_34_x86_64.whl
$(TTNN_WHEEL): | $(STAMP)
	$(PY) -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_34_x86_64 --python-version 3.10 \
		ttnn==0.81.1 -d $(@D) || echo "make test: no ttnn 0.81.1 wheel; the graph_report.py differential tests skip" >&2

test: $(STAMP) $(TTNN_WHEEL)
	# prints its wall time at the end: about 10-12 minutes on an idle 2-core machine (CI's 90 minutes bound it)
	@start=$$(date +%s); $(VENV)/bin/ruff check . && $(PY) -m pytest; rc=$$?; \
	echo "make test: $$(( $$(date +%s) - start )) s of wall time"; exit $$rc

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

visualizer-check: $(STAMP)
	# the real ttnn-visualizer's operations page for a fresh demo report, screenshotted by headless chromium
	# and checked not blank; prints the PNG's path (skips, saying why, without chromium)
	$(PY) tests/visualizer_check.py

bench: $(STAMP)
	$(PY) -m bench

stress: $(STAMP)
	# 200 SIGKILLs at random points and ~20,000 fuzzed .bin files (RELIABILITY.md): about 5 minutes.
	TTREPORT_STRESS=1 $(PY) -m pytest tests/test_crash.py tests/test_fuzz_bin.py -k "sigkill or fuzz or tensor_file_error"
	# 600 byte flips of a report's db, 300 of a tensor file and 6 crafted values in every column, each read by
	# check and every reader (tests/test_fuzz_report.py), and the tensor file checks: about 15 minutes.
	TTREPORT_STRESS=1 $(PY) -m pytest tests/test_fuzz_report.py tests/test_tensor_file_checks.py
	# 1,200 damaged or crafted op logs (pickles, code objects, 2**31-value claims, paths out of the folder), each
	# rebuilt by `ttreport summary` and read by ttreport.open; 9 captures storing every tensor on a 6 MiB disk
	# (tests/test_fuzz_oplog.py, tests/test_hardening_oplog.py): about 3 minutes.
	TTREPORT_STRESS=1 $(PY) -m pytest tests/test_fuzz_oplog.py tests/test_hardening_oplog.py -k "crafted or full_disk"

peer: $(STAMP)
	# tt-metal's own tests/ttnn sample (peer/files.txt), unchanged, against device_sim: a pass table per family and
	# the failure causes ranked (peer/README.md). TT_METAL_HOME (default generated/tt-metal) holds tt-metal at
	# peer/TT_METAL_COMMIT, laid out by peer/fetch_tt_metal.sh. PEER_ARGS="--family norms --json out.json" narrows it.
	# loguru: tt-metal's helpers; IPython and transformers: tests/ttnn/python_api_testing/sweep_tests/ttnn_ops.py;
	# seaborn: tt-metal's tracy package (tools/tracy), which tests import for its signpost.
	$(PY) -m pip install -q loguru ipython "transformers==4.53.0" seaborn
	$(PY) -m peer.run $(PEER_ARGS)

peer-models: $(STAMP)
	# tt-metal's own model tests (tt_transformers decoder on 1x1 and 1x8, Whisper) and basic_python tutorials,
	# unchanged, against device_sim, on stand-in checkpoints made locally: outcome and lowest PCC (peer/README.md).
	# transformers 4.53.0 is tt-metal's pin; datasets and opencv are the Whisper test's imports.
	$(PY) -m pip install -q loguru "transformers==4.53.0" datasets opencv-python-headless
	$(PY) -m peer.models $(PEER_ARGS)

clean:
	rm -rf $(VENV) generated .pytest_cache

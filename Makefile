# Everything bootstraps itself: a fresh machine needs only python3 (3.10+) and this file.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The oldest supported Triton, in its own environment (with the CPU torch, for the interpreter tests).
VENV36 ?= .venv36
BIN36  := $(VENV36)/bin
# Triton 3.9 warns on every compile while this is unset; 1 keeps its current default.
export TRITON_DEFAULT_FP_FUSION ?= 1

.PHONY: demo test test-latest test-oldest bench gpu-check clean

$(BIN)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

$(BIN36)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV36)
	$(BIN36)/python -m pip install -q torch==2.13.0 'triton==3.6.0' cffi rich numpy pytest pytest-xdist
	touch $@

demo: $(BIN)/.ready   ## build the example mixed kernels for every target and print the per-region report
	$(BIN)/python -m examples.run

test: test-latest test-oldest   ## the CPU test suite on the newest and the oldest supported Triton

test-latest: $(BIN)/.ready   ## the suite on Triton 3.9 (GPU tests run too where a GPU is present)
	$(BIN)/python -m pytest -q -n 2 tests

test-oldest: $(BIN36)/.ready   ## the suite on Triton 3.6, the release the GPU machine has
	$(BIN36)/python -m pytest -q -n 2 tests

bench: $(BIN)/.ready  ## compile time, kernel, boundary, parity, profiling figures (GPU times on a GPU); tables + JSON
	$(BIN)/python bench/compile_time.py
	$(BIN)/python bench/kernels.py
	$(BIN)/python bench/boundaries.py
	$(BIN)/python bench/parity.py
	$(BIN)/python bench/profiling.py

gpu-check:   ## on a GPU machine, with its own python3/torch/Triton 3.6+: GPU tests + benchmark -> one table
	$(PYTHON) bench/gpu_check.py

.PHONY: bench-build
bench-build: $(BIN)/.ready  ## build scaling: serial vs parallel, cold vs warm cache (+ launch overhead on a GPU)
	$(BIN)/python bench/build_scaling.py

clean:
	rm -rf $(VENV) $(VENV36) build *.egg-info

# Everything bootstraps itself: a fresh machine needs only python3 (3.10+) and this file.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Triton 3.9 warns on every compile while this is unset; 1 keeps its current default.
export TRITON_DEFAULT_FP_FUSION ?= 1

.PHONY: demo test bench clean

$(BIN)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

demo: $(BIN)/.ready   ## build the example mixed kernels for every target and print the per-region report
	$(BIN)/python -m examples.run

test: $(BIN)/.ready   ## the CPU test suite (GPU tests run too where a GPU is present)
	$(BIN)/python -m pytest -q -n 2 tests

bench: $(BIN)/.ready  ## compile-time benchmark: hybrid vs pure Triton, table + bench/compile_time.json
	$(BIN)/python bench/compile_time.py

.PHONY: bench-build
bench-build: $(BIN)/.ready  ## build scaling: serial vs parallel, cold vs warm cache (+ launch overhead on a GPU)
	$(BIN)/python bench/build_scaling.py

clean:
	rm -rf $(VENV) build *.egg-info

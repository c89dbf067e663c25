# Everything bootstraps itself: a fresh machine needs only python3 (3.10+) and this file.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The oldest supported Triton, in its own environment (with the CPU torch, for the interpreter tests).
VENV36 ?= .venv36
BIN36  := $(VENV36)/bin
# The releases in between, each in its own environment, for the core subset of the suite.
VENV37 ?= .venv37
BIN37  := $(VENV37)/bin
VENV38 ?= .venv38
BIN38  := $(VENV38)/bin
# The core subset run on 3.7 and 3.8: stitching in both directions, boundaries, errors, the interpreter.
CORE_TESTS := tests/test_core.py tests/test_triton_host.py tests/test_movement.py tests/test_errors.py \
              tests/test_quiet_exit.py tests/test_interpret.py tests/test_compat.py
# Triton 3.9 warns on every compile while this is unset; 1 keeps its current default.
export TRITON_DEFAULT_FP_FUSION ?= 1

.PHONY: demo test test-latest test-oldest test-37 test-38 bench gpu-check clean chromium fuzz

$(BIN)/.ready: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

# $(call triton_env,FOLDER,VERSION): an environment with torch, that Triton release and the test tools.
define triton_env
$(1)/bin/.ready: pyproject.toml
	$$(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install -q torch==2.13.0 'triton==$(2)' cffi cryptography rich numpy pytest pytest-xdist hypothesis
	touch $$@
endef
$(eval $(call triton_env,$(VENV36),3.6.0))
$(eval $(call triton_env,$(VENV37),3.7.1))
$(eval $(call triton_env,$(VENV38),3.8.0))

demo: $(BIN)/.ready   ## build the example mixed kernels for every target and print the per-region report
	$(BIN)/python -m examples.run

test: test-latest test-oldest test-37 test-38   ## the CPU suite on the newest and the oldest Triton, its core on 3.7 and 3.8

# The HTML report's test renders the page in headless Chromium (Debian's package): installed where
# it is missing and apt-get is here (CI runs as root); elsewhere that one test skips and says why.
chromium:
	@command -v chromium >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "chromium could not be installed: the HTML report's rendering test will skip"

test-latest: $(BIN)/.ready chromium   ## the suite on Triton 3.9 (GPU tests run too where a GPU is present)
	$(BIN)/python -m pytest -q -rs -n 2 tests

test-oldest: $(BIN36)/.ready   ## the suite on Triton 3.6, the release the GPU machine has
	$(BIN36)/python -m pytest -q -rs -n 2 tests

test-37: $(BIN37)/.ready   ## the core subset on Triton 3.7
	$(BIN37)/python -m pytest -q -rs -n 2 $(CORE_TESTS)

test-38: $(BIN38)/.ready   ## the core subset on Triton 3.8
	$(BIN38)/python -m pytest -q -rs -n 2 $(CORE_TESTS)

# How many fresh cases `make fuzz` draws (about 10 min on one core once Triton's cache holds the common builds).
FUZZ_EXAMPLES ?= 8000

fuzz: $(BIN)/.ready   ## differential fuzz: compiler vs interpreter on generated boundaries; figures -> bench/fuzz.json
	HYBRID_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) HYBRID_FUZZ_REPORT=bench/fuzz.json $(BIN)/python -m pytest -q tests/test_fuzz.py

bench: $(BIN)/.ready  ## compile time, kernel, boundary, parity, port parity, profiling figures (GPU times on a GPU); tables + JSON
	$(BIN)/python bench/compile_time.py
	$(BIN)/python bench/kernels.py
	$(BIN)/python bench/boundaries.py
	$(BIN)/python bench/parity.py
	$(BIN)/python bench/port_parity.py
	$(BIN)/python bench/profiling.py

gpu-check:   ## on a GPU machine, with its own python3/torch/Triton 3.6+: GPU tests + benchmark -> one table
	$(PYTHON) bench/gpu_check.py

.PHONY: bench-build
bench-build: $(BIN)/.ready  ## build scaling: serial vs parallel, cold vs warm cache (+ launch overhead on a GPU)
	$(BIN)/python bench/build_scaling.py

clean:
	rm -rf $(VENV) $(VENV36) $(VENV37) $(VENV38) build *.egg-info

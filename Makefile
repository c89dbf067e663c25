# Everything bootstraps itself: a fresh machine needs only python3 (3.10+) and this file.
# (Into an environment of your own, with torch and Triton 3.6-3.9: pip install '.[test,cluster]'.)
PYTHON ?= python3
# What every environment below shares, installed once: torch (CPU), the project's other
# dependencies and the test tools. Each environment sees them through a .pth file, after its
# own packages, and installs only its Triton (and, in .venv, this project and Dask: the Dask tests run there).
VENVBASE ?= .venvbase
BASE     := $(VENVBASE)/bin
SHARED   := torch==2.13.0 cffi cryptography rich numpy pytest 'pytest-xdist>=3.2' hypothesis
# pip's wheel cache, named: one download of each wheel for every environment (and a CI cache can keep it).
export PIP_CACHE_DIR ?= $(HOME)/.cache/pip
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
# On 3.6 only what can differ by release runs (3.9 runs it all): the tests marked `version`, the core above among them.
VERSION_TESTS := -m version tests
# Triton 3.9 warns on every compile while this is unset; 1 keeps its current default.
export TRITON_DEFAULT_FP_FUSION ?= 1

.PHONY: demo test test-latest test-oldest test-37 test-38 test-fast bench gpu-check clean chromium fuzz

$(BASE)/.ready:
	@echo "== $(VENVBASE): $(SHARED), shared by every environment below (once; torch is the large one)"
	$(PYTHON) -m venv $(VENVBASE)
	$(BASE)/python -m pip install $(SHARED)
	touch $@

# $(call over_base,FOLDER): a virtual environment at FOLDER that also sees $(VENVBASE)'s packages.
define over_base
	$(PYTHON) -m venv $(1)
	$(1)/bin/python -c 'import sys, sysconfig; from pathlib import Path; site = Path(sysconfig.get_paths()["purelib"]); \
	  (site / "venvbase.pth").write_text(str(Path(sys.argv[1]).resolve() / site.relative_to(sys.prefix)) + "\n")' $(VENVBASE)
endef

$(BIN)/.ready: pyproject.toml $(BASE)/.ready
	@echo "== $(VENV): Triton 3.9 and this project (editable, with its test and cluster extras)"
	$(call over_base,$(VENV))
	$(BIN)/python -m pip install -e '.[test,cluster]'
	touch $@

# $(call triton_env,FOLDER,VERSION): an environment with that Triton release over the shared one.
define triton_env
$(1)/bin/.ready: $(BASE)/.ready
	@echo "== $(1): Triton $(2)"
	$$(call over_base,$(1))
	$(1)/bin/python -m pip install 'triton==$(2)' 'setuptools>=70.1'   # (so a wheel builds in any of them: tests/test_install.py)
	touch $$@
endef
$(eval $(call triton_env,$(VENV36),3.6.0))
$(eval $(call triton_env,$(VENV37),3.7.1))
$(eval $(call triton_env,$(VENV38),3.8.0))

demo: $(BIN)/.ready   ## build the example mixed kernels for every target and print the per-region report
	$(BIN)/python -m examples.run

test: test-latest test-oldest test-37 test-38   ## the CPU suite on the newest Triton, what differs by release on 3.6, its core on 3.7 and 3.8

# The HTML report's test renders the page in headless Chromium (Debian's package): installed where
# it is missing, apt-get is here and we are root (as in CI); elsewhere that one test skips and says why.
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
	  echo "chromium: not installed, and no apt-get here to install it: the HTML report's rendering test will skip"; \
	elif [ "$$(id -u)" != 0 ]; then \
	  echo "chromium: not installed, and installing it needs root: the HTML report's rendering test will skip"; \
	else \
	  echo "installing chromium for the HTML report test (apt-get)..."; \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } || \
	  echo "chromium could not be installed: the HTML report's rendering test will skip"; \
	fi

# --dist worksteal: a worker that runs out of tests takes queued ones from the other, so one long
# test near the end does not leave a core idle.
test-latest: $(BIN)/.ready chromium   ## the suite on Triton 3.9 (GPU tests run too where a GPU is present)
	$(BIN)/python -m pytest -q -rs -n 2 --dist worksteal tests

test-oldest: $(BIN36)/.ready   ## the tests of what differs by release on Triton 3.6, the release the GPU machine has
	$(BIN36)/python -m pytest -q -rs -n 2 --dist worksteal $(VERSION_TESTS)

test-37: $(BIN37)/.ready   ## the core subset on Triton 3.7
	$(BIN37)/python -m pytest -q -rs -n 2 --dist worksteal $(CORE_TESTS)

test-38: $(BIN38)/.ready   ## the core subset on Triton 3.8
	$(BIN38)/python -m pytest -q -rs -n 2 --dist worksteal $(CORE_TESTS)

test-fast: $(BIN)/.ready   ## a developer's loop (under 3 min): Triton 3.9, without the tests marked slow
	$(BIN)/python -m pytest -q -rs -n 2 --dist worksteal -m "not slow and not gpu" tests

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

# Ports swept across real kernel libraries from the package registry (bench-only dependencies,
# bench/sweep_libraries.py): every helper at every call site and every kernel whole, five targets.
.PHONY: port-sweep
port-sweep: $(BIN)/.ready
	$(BIN)/python -m pip install liger-kernel==0.8.5 fla-core==0.6.0 einops
	$(BIN)/python bench/port_sweep.py --targets all --json bench/port_sweep.json

.PHONY: bench-build
bench-build: $(BIN)/.ready  ## build scaling: serial vs parallel, cold vs warm cache (+ launch overhead on a GPU)
	$(BIN)/python bench/build_scaling.py

clean:
	rm -rf $(VENV) $(VENV36) $(VENV37) $(VENV38) $(VENVBASE) build *.egg-info

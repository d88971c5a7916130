# Two commands a new user needs (see README): `make demo` and `make test`.
# Each creates .venv and installs what it needs first. Torch is pinned to 2.13.0 when no torch is present,
# because any other spec pulls several GB of CUDA packages on these machines.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# The oldest transformers and torch pyproject.toml admits, in an environment of their own (`make test-oldest`).
OLDEST_VENV         ?= .venv-oldest
OLDEST_TRANSFORMERS := 5.18.0
OLDEST_TORCH        := 2.13.0
# The registry-driven tests: every head of every architecture, under transformers' contract and other people's code,
# and the Auto registration that reads transformers' mappings as they load.
REGISTRY_TESTS := tests/test_common.py tests/test_transformers_contract.py tests/layers/test_checkpointing.py \
	tests/test_peft.py tests/test_pipelines.py tests/test_export.py tests/utils/test_remote_code.py \
	tests/test_transformers_common.py tests/registry/test_auto.py
# Run on the oldest releases too: what reads your files (every format and task kind, bad rows anywhere) and the
# faithfulness measures and the attention beside Integrated Gradients (Captum through every measured head).
OLDEST_TOO := tests/data/test_bad_rows.py tests/faithfulness tests/visualization/test_side_by_side.py

.PHONY: install browser demo docs test test-long test-oldest test-slow test-gpu lint format clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hf-attn demo

# The manual (docs/: its pages, the registry's pages and the API reference) built into site/, every warning an error.
# MkDocs 1.x prints a notice about its maintenance on each build; the variable keeps it off the log.
docs: $(STAMP)
	DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict --quiet -f docs/mkdocs.yml

# Debian's Chromium for the attention pictures' browser test (tests/visualization/test_figure.py); where it cannot be
# installed (no apt-get, not root) that test is skipped with the reason.
browser:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ; } || \
		echo "make browser: Chromium could not be installed; the browser test will be skipped"

test: $(STAMP) browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

# The registry-driven tests (and OLDEST_TOO) on the oldest supported transformers and torch (CI runs it after
# `make test`).
test-oldest:
	test -x $(OLDEST_VENV)/bin/python || $(PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/pip install -q torch==$(OLDEST_TORCH)
	$(OLDEST_VENV)/bin/pip install -q -e ".[dev]" transformers==$(OLDEST_TRANSFORMERS)
	$(OLDEST_VENV)/bin/python -c "import torch, transformers; print('test-oldest: transformers', \
		transformers.__version__, 'torch', torch.__version__)"
	$(OLDEST_VENV)/bin/python -m pytest -q -n 2 --dist loadgroup $(REGISTRY_TESTS) $(OLDEST_TOO)

# The GPU suite (tests/test_gpu.py, and the kernel tests on CUDA) on a machine with a CUDA device: no venv there, the
# machine's own Python with torch, triton and transformers (GPU_PYTHON), hf_attn from this checkout. Skipped with the
# reason where there is no CUDA device. benchmarks/gpu_session.sh runs it, then benchmarks/gpu_report.py.
GPU_PYTHON ?= python3
GPU_WORKERS ?= 8
test-gpu:
	PYTHONPATH=$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH} $(GPU_PYTHON) -m pytest -q -p no:cacheprovider -n $(GPU_WORKERS) \
		-m gpu tests/test_gpu.py tests/test_kernels.py tests/layers/test_triton_losses.py

# The checks `make test` leaves to this tier (pyproject's `long` marker); CI runs it after `make test`.
test-long: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m long

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) $(OLDEST_VENV) build *.egg-info .pytest_cache .ruff_cache hf-attn-demo site

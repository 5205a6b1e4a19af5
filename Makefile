# numfuzz: `make run` fuzzes (GPU if present, else a short CPU campaign); `make test` runs the tests.
# Both build .venv from scratch when it is missing. TORCH is the torch requirement to install first:
# on the dev machines torch==2.13.0 is a local CPU build, so pip never pulls the CUDA wheels.
# The ray extra is installed too, so the suite tests --engine ray (the local engine needs nothing).
PYTHON ?= python3
TORCH ?= torch==2.13.0
VENV := .venv
BIN := $(VENV)/bin
CASES ?= 40

.PHONY: setup run test lint bench clean

$(BIN)/numfuzz: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -e ".[dev,ray]"
	touch $@

setup: $(BIN)/numfuzz

run: setup
	$(BIN)/numfuzz run --device auto --cases $(CASES) --out corpus

test: setup
	$(BIN)/python -m pytest -q tests

lint: setup
	$(BIN)/ruff check fuzzer tests bench

bench: setup
	$(BIN)/python bench/throughput.py

clean:
	rm -rf $(VENV) .pytest_cache

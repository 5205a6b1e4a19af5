# numfuzz: `make run` fuzzes (GPU if present, else a short CPU campaign); `make test` runs the tests.
# Both build $(VENV) from scratch when it is missing: TORCH first, then numfuzz with its dev and
# ray extras (pytest, pytest-xdist, ruff, hypothesis; Ray, about 240 MB, because the suite and CI
# test --engine ray; the local engine needs neither).
# TORCH is the newest release, what users run and what a bug report must be checked on: a CUDA
# build of about 5 GB from the registry (it runs on the CPU too). Machines that cap pip below it
# (/etc/xdg/pip/constraints.txt) have the cap lifted for these two installs only, or pip would
# take the capped release instead. CI runs `make test` as written, on this torch (.ci/run);
# bench/RESULTS.md §40 records the suite's runs on 2.15 and 2.13 and which tests skip on which.
PYTHON ?= python3
TORCH ?= torch==2.15.0
VENV ?= .venv
BIN := $(VENV)/bin
PIP := PIP_CONSTRAINT=/dev/null $(BIN)/pip
CASES ?= 40
SEED ?=
OUT ?= corpus
ARGS ?=
# pytest-xdist workers for `make test`: three on CI's two cores. The suite is CPU-bound, but
# some tests wait (a timeout, a Ray actor, a hung worker) and a third worker fills that core:
# from fresh clones two workers took 910 s and 927 s (the cores 91% busy) and three 870, 896
# and 850 s (95%); in a warm venv two were faster (717 s against 809 s), but CI is a fresh clone
# (§35). Four were slower than three (§34). A file's tests stay on one worker except the long
# files' (tests/conftest.py). The 25 slowest tests are listed at the end, and every skipped
# test with its reason (-rs): a test that skips itself on this torch names the torch.
JOBS ?= 3

.PHONY: setup run test lint typecheck bench clean

# pip writes the bytecode of what it installs on one core (30 s of the install here);
# compileall writes the same on every core (bench/results/35-suite-time.md). A file that does not
# compile gets no bytecode, as under pip: Python compiles it when, if ever, it is imported.
$(BIN)/numfuzz: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --no-compile "$(TORCH)"
	$(PIP) install -q --no-compile -e ".[dev,ray,trace]"
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib > /dev/null || true
	touch $@

setup: $(BIN)/numfuzz

# A fresh campaign seed per run unless SEED= is given (each campaign keeps its own ledger in
# OUT, so runs never mix); findings are the product, so exit 1 (findings present) is success.
run: setup
	@seed="$(SEED)"; [ -n "$$seed" ] || seed=$$(od -An -N3 -tu4 /dev/urandom | tr -d ' '); \
	echo "make run: campaign seed $$seed (make run SEED=$$seed repeats it)"; \
	$(BIN)/numfuzz run --device auto --cases $(CASES) --seed $$seed --out $(OUT) $(ARGS); \
	status=$$?; [ $$status -le 1 ] || exit $$status

test: setup
	$(BIN)/python -m pytest -q -rs -n $(JOBS) --dist loadfile --durations=25 tests

lint: setup
	$(BIN)/ruff check fuzzer tests bench

# mypy over fuzzer/ at the strictness pyproject.toml states ([tool.mypy]); CI runs it.
typecheck: setup
	$(BIN)/mypy

bench: setup
	$(BIN)/python bench/throughput.py

clean:
	rm -rf $(VENV) .venv-ci .pytest_cache

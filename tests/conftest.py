"""Shared fixtures. Worker processes are expensive (a fresh interpreter, ~15 s for the first
Inductor compile), so tests share them per session instead of starting their own."""

from __future__ import annotations

import inspect

import pytest

from fuzzer.execute.runner import trust_backend
from fuzzer.execute.workers import Runner
from tests import fakes, triage_fakes

# The suite's own fake backends are trusted, as a user trusts one with --trust-backend: case
# files naming them load. Every other module:function backend in a file is still refused.
for _module in (fakes, triage_fakes):
    for _name, _fn in inspect.getmembers(_module, inspect.isfunction):
        if not _name.startswith("_") and _fn.__module__ == _module.__name__:
            trust_backend(f"{_module.__name__}:{_name}")


@pytest.fixture(scope="session")
def fake_runner():
    """A worker for fake backends: no Inductor warm-up."""
    runner = Runner("cpu", threads=1, timeout=60, warmup=False)
    yield runner
    runner.close()


@pytest.fixture(scope="session")
def inductor_runner():
    """A warm worker compiling with real Inductor on the CPU."""
    runner = Runner("cpu", threads=1, timeout=300, warmup=True)
    yield runner
    runner.close()


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)

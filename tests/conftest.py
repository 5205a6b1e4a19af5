"""Shared fixtures. Worker processes are expensive (a fresh interpreter, ~15 s for the first
Inductor compile), so tests share them per session instead of starting their own."""

from __future__ import annotations

import pytest

from fuzzer.workers import Runner


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

"""Shared fixtures. Worker processes are expensive (a fresh interpreter, ~15 s for the first
Inductor compile), so tests share them per session instead of starting their own."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

from fuzzer import clock
from fuzzer.campaign.settings import Settings
from fuzzer.corpus.ledger import campaigns_in
from fuzzer.execute import memcheck, workers, zygote
from fuzzer.execute.recipe import Recipe, trust_backend
from fuzzer.execute.surface import Surface
from fuzzer.execute.workers import LocalRunner
from fuzzer.nightly.night import NightSettings
from tests import fakes, gpu_fakes, triage_fakes

# The suite's campaigns (CLI runs, nights in subprocesses) run one worker unless a test says
# otherwise: the machine's default (one per core) would start a worker per core in every test.
os.environ.setdefault(workers.WORKERS_ENV, "1")

# The suite's own fake backends are trusted, as a user trusts one with --trust-backend: case
# files naming them load. Every other module:function backend in a file is still refused.
for _module in (fakes, triage_fakes, gpu_fakes):
    for _name, _fn in inspect.getmembers(_module, inspect.isfunction):
        if not _name.startswith("_") and _fn.__module__ == _module.__name__:
            trust_backend(f"{_module.__name__}:{_name}")


@pytest.fixture(scope="session")
def fake_runner():
    """A worker for fake backends: no Inductor warm-up."""
    runner = LocalRunner("cpu", threads=1, timeout=60, warmup=False)
    yield runner
    runner.close()


@pytest.fixture
def sim_clock():
    """A simulated budget clock for one test (``fuzzer.clock.Simulated``): every budget reads
    it, and it moves only by a fixed cost per worker run (1 s) and per subprocess (5 s), so a
    test of budget logic decides the same way however fast or loaded the machine is. Set
    ``costs`` or ``patience`` on it before the work starts to change them."""
    simulated = clock.Simulated()
    previous = clock.install(simulated)
    yield simulated
    clock.install(previous)


@pytest.fixture(scope="session")
def inductor_runner():
    """A warm worker compiling with real Inductor on the CPU."""
    runner = LocalRunner("cpu", threads=1, timeout=300, warmup=True)
    yield runner
    runner.close()


RAY_FILES = ("tests/test_fleet.py", "tests/test_fleet_nodes.py")
# Files whose tests are each a night, a campaign or a deployment (tens of seconds apiece, no
# module fixture worth sharing): each test is a unit of its own, so the workers share them.
SPLIT_FILES = ("tests/test_nightly.py", "tests/test_confirm.py", "tests/test_deploy.py",
               "tests/test_generation_total.py", "tests/test_capture.py")
# ... except these, which share a module fixture's store and read what the one before left.
IN_ORDER = ("tests/test_nightly.py::test_recheck_", "tests/test_nightly.py::test_findings_")
# Handed out first (longest first, as measured under `make test`), so that no long unit starts
# last and leaves the other worker idle.
FIRST = (*RAY_FILES, "tests/test_gpu_smoke.py", *SPLIT_FILES, "tests/test_cli_promises.py",
         "tests/test_strategies.py", "tests/test_triage.py")


def pytest_collection_modifyitems(config, items):
    import torch

    first = {name: rank for rank, name in enumerate(FIRST)}
    items.sort(key=lambda item: first.get(item.nodeid.split("::")[0], len(first)))
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: ``make test`` runs -n 3 --dist loadfile
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, but the Ray files are one unit (each starts a Ray cluster, and two
    at once on CI's two cores would starve both) and each test of ``SPLIT_FILES`` is a unit of
    its own. (``--dist loadgroup`` would say this with marks, but pytest-xdist 3.8 cannot
    rename test ids under pytest 9.2, so its groups are silently ignored.) Other files' tests
    stay on one worker, in file order."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    # pytest-xdist would hand out the units with the most tests first (``--loadscope-reorder``,
    # its default), which puts test_ir's thousand quick tests first and the long single-test
    # units last, where they end the run alone: keep FIRST's order instead.
    config.option.loadscopereorder = False

    class RayFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            if scope in SPLIT_FILES and not nodeid.startswith(IN_ORDER):
                return nodeid
            return RAY_FILES[0] if scope in RAY_FILES else scope

    return RayFilesTogether(config, log)


def skip_on_this_torch(why: str) -> NoReturn:
    """Skip a test whose claim the installed torch makes moot (a bug fixed in it, a behaviour it
    does not have), naming that torch: ``make test`` runs pytest with ``-rs``, so the suite's
    summary lists each such skip with its torch (bench/RESULTS.md lists which tests run on which
    torch)."""
    import sys

    import torch

    caller = sys._getframe(1).f_code  # the summary's location is this helper's: name the test
    pytest.skip(f"on torch {torch.__version__} ({Path(caller.co_filename).name}::"
                f"{caller.co_name}): {why}")


def assert_draft_reads_once(text: str) -> None:
    """What a maintainer reads in a draft is there, and each part once: one plain reproducer
    (a ``python`` block) and what it printed, one verdict table, the ablation, the environment
    block and one filing command; and no sentence of prose or row of a table twice. (Not a line
    count: the environment block's length is the installed packages', triton's line and all.)"""
    from collections import Counter

    assert text.count("```python\n") == 1, "one plain reproducer"
    assert text.count("| index | eager | compiled | float64 |") == 1, "one verdict table"
    assert text.count("#### Ablation") == 1 and text.count("### Versions") == 1
    assert text.count("gh issue create ") == 1, "one filing line"
    prose, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.strip() and not set(line) <= set("|-: "):
            prose.append(line.strip())
    repeated = [line for line, n in Counter(prose).items() if n > 1]
    assert not repeated, f"said twice: {repeated}"


def ledger_of(out: Path) -> dict:
    """The ledger of the one campaign a test ran in ``out``."""
    (found,) = campaigns_in(out)
    return json.loads(found[0].read_text())


def python(*argv: str | Path, timeout: float = 600, cwd: Path | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python argv…`` with its output captured, as a fresh interpreter that can import the
    suite's fake backends: forked from numfuzz's zygote (``fuzzer.execute.zygote``: torch
    already imported, 6 to 9 s of each start saved) where nothing read at import differs."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), **(env or {})}
    argv = tuple(str(a) for a in argv)
    numfuzz = argv[:2] == ("-m", "fuzzer") or (argv and Path(argv[0]).name == "numfuzz")
    if numfuzz and memcheck.library() is not None:
        # A numfuzz command runs its CPU workers under malloc checking: a server for that
        # environment here, once per test process, is one its workers fork from (handed to
        # it, ``zygote._Handed``) instead of one it would start afresh in every test.
        zygote.prepare({**env, **memcheck.environment(env)})
    return zygote.run(argv, timeout=timeout, cwd=cwd, env=env)


def run_repro(path: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """A repro.py (or a draft's plain reproducer, in ``cwd``) in a fresh interpreter."""
    return python(path, cwd=cwd)


def minimized(case, runner, tmp_path: Path, **options):
    """``minimize`` as every test of it should run it: the result's repro.py is rendered and run
    in a fresh interpreter, and its exit status must equal the oracle's (1 where the minimized
    case reproduced k/k, else 0), so no test produces a minimized case whose repro disagrees."""
    from fuzzer.reduce.minimize import minimize
    from fuzzer.reduce.repro import write_repro

    result = minimize(case, runner, corpus=tmp_path / "slips", **options)
    done = run_repro(write_repro(result.case, tmp_path / "repro"))
    k = result.reliability[1]
    assert done.returncode == (1 if result.reliability == (k, k) else 0), \
        done.stdout + done.stderr
    return result


RECIPE_FIELDS = ("backend", "config", "surface", "policy")
CAMPAIGN_FIELDS = ("device", "cases", "dtypes", "workers", "grammar", "timeout", "draws",
                   "strategies", "search")


def recipe_of(fields: dict) -> Recipe:
    """The recipe named by plain keyword fields (``backend="eager"``, ``surface={...}``)."""

    given = {k: fields.pop(k) for k in RECIPE_FIELDS if k in fields}
    if isinstance(given.get("surface"), dict):
        given["surface"] = Surface(**given["surface"])
    return Recipe(**given)


def campaign_settings(**fields) -> Settings:
    """Campaign settings with the recipe given field by field, as tests like to spell them."""
    return Settings(recipe=recipe_of(fields), **fields)


def night_settings(**fields) -> NightSettings:
    """Night settings with the night's campaign given field by field (device, cases, backend …)."""
    campaign = {k: fields.pop(k) for k in CAMPAIGN_FIELDS if k in fields}
    return NightSettings(campaign=campaign_settings(**campaign, **{
        k: fields.pop(k) for k in RECIPE_FIELDS if k in fields}), **fields)


TWO_KNOBS = ("emulate_precision_casts", "backend=aot_eager")


@pytest.fixture
def few_knobs(monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """The nightly takes its causes over two knobs instead of the full set: each knob is a
    fresh compile, and the full set is what the triage tests and
    ``test_triage_and_the_nightly_give_one_bug_one_signature`` exercise. The night's code path
    is otherwise unchanged."""
    from functools import partial

    from fuzzer.nightly import pipeline
    from fuzzer.triage import signature
    from fuzzer.triage.attribute import knob_named

    monkeypatch.setattr(signature, "FULL_SET", frozenset(TWO_KNOBS))
    monkeypatch.setattr(pipeline, "cause_of", partial(
        signature.cause_of, knobs=[knob_named(name) for name in TWO_KNOBS]))
    return TWO_KNOBS

"""Fake backends whose planted divergence a knob removes, and hand-built cases, for the triage,
store, draft and nightly tests. Backends are named ``tests.triage_fakes:<name>`` and run in worker
processes, so this module must stay importable there."""

from __future__ import annotations

import functools
import os
import random
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from fuzzer.corpus.case import Case
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import Task
from fuzzer.gen.grammar import Builder
from fuzzer.ir.graph import Graph
from fuzzer.judge.verdict import Verdict
from tests.fakes import _driver, uint8_plus_one

if TYPE_CHECKING:
    from fuzzer.triage.attribute import Attribution, Knob

FIXED_ENV = "NUMFUZZ_TEST_BUG_FIXED"
_calls = {"n": 0}


def _switchable(gm, example_inputs, planted_now):
    planted = uint8_plus_one(gm, example_inputs)

    def run(*args):
        return planted(*args) if planted_now() else gm(*args)

    return run


def plant_unless_emulate(gm, example_inputs):
    """uint8 +1, unless torch._inductor.config.emulate_precision_casts is set (read at run time,
    inside the config patch the runner applies)."""
    import torch._inductor.config as config

    return _switchable(gm, example_inputs, lambda: not config.emulate_precision_casts)


def plant_unless_env(gm, example_inputs):
    """uint8 +1, unless the worker was started with NUMFUZZ_TEST_BUG_FIXED=1: a 'build' with the
    bug and one without it, told apart by the environment of the process."""
    return _switchable(gm, example_inputs, lambda: os.environ.get(FIXED_ENV) != "1")


OLD_ENV = "NUMFUZZ_TEST_OLD_BUILD"


def plant_unless_old(gm, example_inputs):
    """uint8 +1, unless the process says it is an older build (NUMFUZZ_TEST_OLD_BUILD=1): a bug
    a newer torch brought in, absent from the older one."""
    return _switchable(gm, example_inputs, lambda: os.environ.get(OLD_ENV) != "1")


def plant_alternating(gm, example_inputs):
    """uint8 +1 on every other compile in this process: a deterministic flaky bug, the same in
    both runs of one compile (a worker runs compiled twice; a difference between those two would
    be run-to-run nondeterminism instead, never a finding)."""
    _calls["n"] += 1
    planted = _calls["n"] % 2 == 1
    return _switchable(gm, example_inputs, lambda: planted)


def e8m0_graph(dtype: str = "float32", scale: float = 3.0, size: int = 4) -> Graph:
    """x -> mul_scalar -> e8m0: one uint8 output the planted backends can bump."""
    b = Builder(random.Random(0), dtype)
    x = b.input((size,))
    b.graph.outputs = [b.op("e8m0", b.op("mul_scalar", x, value=scale), eps=1e-30)]
    return b.graph


def fp16_roundtrip_gt(values: tuple[float, ...] = (0.5002, 0.25, 0.70001, 0.50003)
                      ) -> tuple[Graph, dict[str, torch.Tensor]]:
    """A real regression by the float64 rule on Inductor CPU: ``x.to(float16).to(float32) > t``.
    Eager and float64 round 0.5002 to 0.5 (not above 0.50001); Inductor's C++ kernels keep the
    float32 value unless ``emulate_precision_casts`` (expected by default, FIELD_NOTES §5).
    float64 sits about 160 float32 ulps from the threshold and eager is exact there: strong."""
    b = Builder(random.Random(0), "float32")
    x = b.input((len(values),))
    rounded = b.op("cast_roundtrip", x, to="float16")
    b.graph.outputs = [b.op("gt_scalar", rounded, value=0.50001)]
    return b.graph, {str(x): torch.tensor(values, dtype=torch.float32)}


# The recipe of a test that wants the round trip judged as Inductor computes it by default: a
# recipe that sets the knob itself is judged as it stands, never rerun to call it expected.
AS_IS = {"emulate_precision_casts": False}


@functools.cache
def inductor_keeps_roundtrip(**config) -> bool:
    """What this torch does, measured here without numfuzz: does Inductor on the CPU, with
    ``config`` patched, give eager's answer on ``fp16_roundtrip_gt``? The real-Inductor tests
    compare numfuzz's triage with this rather than with a fixed outcome, which changes between
    torch versions."""
    graph, inputs = fp16_roundtrip_gt()
    x = next(iter(inputs.values()))

    def fn(t):
        return t.to(torch.float16).to(torch.float32) > 0.50001

    torch._dynamo.reset()
    with torch._inductor.config.patch(force_disable_caches=True, **config):
        compiled = torch.compile(fn, backend="inductor", fullgraph=True)(x)
    torch._dynamo.reset()
    return torch.equal(compiled, fn(x))


def worker_free_knobs() -> list[Knob]:
    """Every knob except those that need a worker of their own (an environment variable read at
    import: a fresh interpreter, about 6 CPU-seconds on two cores): for tests whose claim is about
    other knobs. ``test_environment_knob_gets_its_own_worker`` tests the path the ones left out
    take, with knobs of its own."""
    from fuzzer.triage.attribute import KNOBS

    return [k for k in KNOBS if not k.env]


def attributed(case: Case, runner) -> Attribution:
    """``attribute`` over ``worker_free_knobs()`` on ``runner`` alone (its surface and stage
    knobs included, as always): what a test of those reads."""
    from fuzzer.execute.pool import RunnerPool
    from fuzzer.triage.attribute import attribute

    return attribute(case, RunnerPool({"cpu": runner}, warmup=False), worker_free_knobs())


def judged_case(graph: Graph, inputs: dict[str, torch.Tensor], backend: str, runner,
                config: dict | None = None) -> Case:
    """A case whose verdict comes from actually running it (never written by hand)."""
    dtype = next(graph.node(n).dtype for n in graph.input_ids())
    recipe = Recipe(backend, dict(config or {}))
    verdict = runner.run(Task(graph=graph, draws=[inputs], recipe=recipe)).verdict
    return Case(graph=graph, inputs=inputs, dtype=dtype, recipe=recipe, verdict=verdict)


def planted_case(backend: str, runner, scale: float = 3.0, dtype: str = "float32") -> Case:
    graph = e8m0_graph(dtype, scale)
    x = graph.input_ids()[0]
    inputs = {str(x): torch.tensor([0.3, 1.5, -2.0, 7.0], dtype=getattr(torch, dtype))}
    return judged_case(graph, inputs, backend, runner)


def case_of_verdict(graph: Graph, kind: str = "int-flip", output: int = 0,
                    device: str = "cpu") -> Case:
    """A case with a bare verdict naming one output, for what reads only the graph and kind
    (signatures, diagrams); inputs are ones."""
    inputs = {str(n): torch.ones(graph.node(n).shape,
                                 dtype=getattr(torch, graph.node(n).dtype))
              for n in graph.input_ids()}
    return Case(graph=graph, inputs=inputs, device=device,
                verdict=Verdict(kind, output, graph.outputs[output]))


def hang_file(parent: int | None = None) -> Path:
    """While this file exists, ``plant_or_hang`` hangs under its knob. Named after the test
    process (the workers' parent), so concurrent test runs do not share it."""
    return Path(tempfile.gettempdir()) / f"numfuzz-test-hang-{parent or os.getpid()}"


def plant_or_hang(gm, example_inputs):
    """uint8 +1; with ``pattern_matcher=False`` (a triage knob) and ``hang_file`` present, the
    compiled call sleeps for an hour instead: a run in flight at the night's deadline."""
    import torch._inductor.config as config

    planted = uint8_plus_one(gm, example_inputs)

    def run(*args):
        if not config.pattern_matcher and hang_file(_driver()).exists():
            time.sleep(3600)
        return planted(*args)

    return run


def plant_or_raise(gm, example_inputs):
    """uint8 +1 in the buggy build; in the 'fixed' one (NUMFUZZ_TEST_BUG_FIXED=1) the compiled
    call raises instead: no longer the same divergence, but not clean either."""
    planted = uint8_plus_one(gm, example_inputs)

    def run(*args):
        if os.environ.get(FIXED_ENV) == "1":
            raise RuntimeError("planted: the new build crashes instead")
        return planted(*args)

    return run


def erf_through_heads() -> list[tuple[Graph, dict[str, torch.Tensor]]]:
    """Five different graphs in which erf feeds five different heads (one of them through a
    scale): with tests.fakes:erf_quarter they are one root cause, found five ways."""
    builds = [
        lambda b, x: b.op("e8m0", b.op("erf", b.op("tanh", x)), eps=1e-30),
        lambda b, x: b.op("quant_int8", b.op("erf", b.op("relu", x)), scale=0.01,
                          zero_point=0),
        lambda b, x: b.op("gt_scalar", b.op("erf", b.op("sigmoid", x)), value=0.5),
        lambda b, x: b.op("quant_uint8", b.op("erf", b.op("abs", x)), scale=0.02,
                          zero_point=0),
        lambda b, x: b.op("to_int32", b.op("mul_scalar", b.op("erf", b.op("exp", x)),
                                           value=8.0)),
    ]
    cases = []
    for i, build in enumerate(builds):
        b = Builder(random.Random(i), "float32")
        x = b.input((2, 8))
        b.graph.outputs = [build(b, x)]
        values = torch.linspace(0.3, 2.0, 16).reshape(2, 8) + 0.01 * i
        cases.append((b.graph, {str(x): values}))
    return cases

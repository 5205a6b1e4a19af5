"""Fake backends whose planted divergence a knob removes, and hand-built cases, for the triage,
store, draft and nightly tests. Backends are named ``tests.triage_fakes:<name>`` and run in worker
processes, so this module must stay importable there."""

from __future__ import annotations

import os
import random

import torch

from fuzzer.corpus.case import Case
from fuzzer.execute.runner import Task
from fuzzer.gen.grammar import Builder
from fuzzer.ir.graph import Graph
from fuzzer.judge.oracle import Verdict
from tests.fakes import uint8_plus_one

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


def plant_alternating(gm, example_inputs):
    """uint8 +1 on every other compiled call in this process: a deterministic flaky bug."""

    def planted_now():
        _calls["n"] += 1
        return _calls["n"] % 2 == 1

    return _switchable(gm, example_inputs, planted_now)


def e8m0_graph(dtype: str = "float32", scale: float = 3.0, size: int = 4) -> Graph:
    """x -> mul_scalar -> e8m0: one uint8 output the planted backends can bump."""
    b = Builder(random.Random(0), dtype)
    x = b.input((size,))
    b.graph.outputs = [b.op("e8m0", b.op("mul_scalar", x, value=scale), eps=1e-30)]
    return b.graph


def fp16_gelu_e8m0() -> tuple[Graph, dict[str, torch.Tensor]]:
    """A real Inductor CPU divergence: exact GELU in float16 feeding E8M0. Eager rounds GELU(-8)
    (about -5e-15) to float16 zero, so log2 sees 0 + eps -> -inf -> code 0; Inductor keeps the
    fp32 intermediate and answers 28; float64 says 80. emulate_precision_casts removes it."""
    b = Builder(random.Random(0), "float16")
    x = b.input((4,))
    b.graph.outputs = [b.op("e8m0", b.op("gelu", x, approximate="none"), eps=1e-30)]
    return b.graph, {str(x): torch.tensor([-8.0, 1.0, 0.5, -3.0], dtype=torch.float16)}


def judged_case(graph: Graph, inputs: dict[str, torch.Tensor], backend: str, runner,
                config: dict | None = None) -> Case:
    """A case whose verdict comes from actually running it (never written by hand)."""
    dtype = next(graph.node(n)["dtype"] for n in graph.input_ids())
    task = Task(graph=graph.to_dict(), draws=[inputs], backend=backend, config=dict(config or {}))
    verdict = Verdict.from_dict(runner.run(task)["verdict"])
    return Case(graph=graph, inputs=inputs, dtype=dtype, backend=backend, verdict=verdict,
                config=dict(config or {}))


def planted_case(backend: str, runner, scale: float = 3.0, dtype: str = "float32") -> Case:
    graph = e8m0_graph(dtype, scale)
    x = graph.input_ids()[0]
    inputs = {str(x): torch.tensor([0.3, 1.5, -2.0, 7.0], dtype=getattr(torch, dtype))}
    return judged_case(graph, inputs, backend, runner)


def case_of_verdict(graph: Graph, kind: str = "int-flip", output: int = 0,
                    device: str = "cpu") -> Case:
    """A case with a bare verdict naming one output, for what reads only the graph and kind
    (signatures, diagrams); inputs are ones."""
    inputs = {str(n): torch.ones(graph.node(n)["shape"],
                                 dtype=getattr(torch, graph.node(n)["dtype"]))
              for n in graph.input_ids()}
    return Case(graph=graph, inputs=inputs, device=device,
                verdict=Verdict(kind, output, graph.outputs[output]))


def plant_or_raise(gm, example_inputs):
    """uint8 +1 in the buggy build; in the 'fixed' one (NUMFUZZ_TEST_BUG_FIXED=1) the compiled
    call raises instead: no longer the same divergence, but not clean either."""
    planted = uint8_plus_one(gm, example_inputs)

    def run(*args):
        if os.environ.get(FIXED_ENV) == "1":
            raise RuntimeError("planted: the new build crashes instead")
        return planted(*args)

    return run

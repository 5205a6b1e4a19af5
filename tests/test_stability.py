"""The evidence rule on chaotic heads: a discrete code off by several steps is strong evidence
only where float64's own code survives the rounding noise eager makes upstream of the head
(``rules.nudge_``, ``semantics.stability``). Planted compiled outputs, judged both ways."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from fuzzer.corpus.case import Case
from fuzzer.execute import runner
from fuzzer.gen.grammar import Builder
from fuzzer.ir import render
from fuzzer.ir.graph import Graph
from fuzzer.judge import rules, semantics
from fuzzer.judge.kinds import Kind
from fuzzer.reduce.repro import write_repro
from tests.conftest import run_repro

DATA = Path(__file__).parent / "data"


def _frexp_exponent_of(chaotic: bool) -> tuple[Graph, list[torch.Tensor]]:
    """``frexp(|remainder(x * 1000003, 30005)|)[1]`` (chaotic: x is amplified a million times
    before a remainder) or ``frexp(x * 3)[1]`` (stable), on large float32 x (eager rounds
    x * 1000003 by ~1e6, far more than the divisor)."""
    b = Builder(random.Random(0), "float32")
    x = b.input((64,))
    y = b.op("mul_scalar", x, value=1000003.0 if chaotic else 3.0)
    if chaotic:
        y = b.op("abs", b.op("remainder_scalar", y, value=30005.0))
    b.graph.outputs = [b.op("frexp", y, pick=1)]
    gen = torch.Generator().manual_seed(0)
    return b.graph, [torch.randn(64, generator=gen) * 1e7]


def _judged(graph: Graph, args: list[torch.Tensor], measure: bool):
    """The verdict with compiled planted 5 codes above float64's on every element."""
    trace = render.load(render.render_trace(graph), "trace")
    eager_values = trace(*args)
    fp64 = rules.float64_run(trace, args)
    out = graph.outputs[0]
    compiled = fp64[out].to(eager_values[out].dtype) + 5
    nudged = (lambda: runner.nudged_runs(graph, args)) if measure else None
    return semantics.judge_graph(graph, [eager_values[out]], [compiled], fp64, eager_values,
                                 nudged=nudged)


def test_a_chaotic_code_is_no_evidence_however_many_steps_it_moves() -> None:
    graph, args = _frexp_exponent_of(chaotic=True)
    unmeasured = _judged(graph, args, measure=False)
    assert unmeasured.kind == Kind.INT_FLIP  # the steps rule alone calls it strong …
    verdict = _judged(graph, args, measure=True)
    assert verdict.kind == Kind.WEAK_FLIP, verdict.summary()  # … eager's own noise does not
    details = verdict.outputs[0].details
    assert details.strong == 0 and details.chaotic > 0
    assert all(e.stable is False for e in details.elements)


def test_a_stable_code_several_steps_off_is_strong_evidence() -> None:
    graph, args = _frexp_exponent_of(chaotic=False)
    verdict = _judged(graph, args, measure=True)
    assert verdict.kind == Kind.INT_FLIP, verdict.summary()
    assert verdict.outputs[0].details.chaotic == 0


def test_nudges_move_only_what_eager_rounds() -> None:
    """The nudged trace nudges float nodes whose op rounds, never inputs, views or steps; the
    same seeds give the same nudges (numfuzz and a repro agree)."""
    b = Builder(random.Random(0), "float32")
    x = b.input((8,))
    floor = b.op("floor", b.op("mul_scalar", x, value=3.0))
    b.graph.outputs = [b.op("transpose", b.op("unsqueeze", floor, dim=0), dim0=0, dim1=1)]
    source = render.render_nudged_trace_function(b.graph)
    assert source.count("nudge_(") == 1 and "nudge_(v1, torch.float32, _k, 1)" in source
    args = [torch.linspace(-2, 2, 8)]
    first, again = runner.nudged_runs(b.graph, args), runner.nudged_runs(b.graph, args)
    assert all(torch.equal(a[1], c[1]) for a, c in zip(first, again))
    exact = rules.float64_run(render.load(render.render_trace(b.graph), "trace"), args)
    moved = first[0][1] - exact[1]
    assert bool((moved != 0).any()) and float(moved.abs().max()) <= 6.0 * 2 ** -23
    assert torch.equal(args[0], torch.linspace(-2, 2, 8))  # the caller's inputs are untouched


@pytest.mark.inductor
def test_the_chaotic_remainder_frexp_night_case_is_no_finding(inductor_runner, tmp_path) -> None:
    """A real night's raw finding on torch 2.15.0 (2.13 behaves the same): ``frexp(abs(
    remainder((x1*x2 + x0) * 1000003, p)))[1]`` in bf16, saved as an int-flip strong only by the
    "off by more than one step" rule. Replayed with real Inductor it is no finding, and its
    repro.py (which judges with the same rule) says so."""
    case = Case.load(DATA / "chaotic_remainder_frexp.pt")
    assert case.verdict is not None and case.verdict.kind == Kind.INT_FLIP  # as it was saved
    verdict = inductor_runner.run(case.task()).verdict
    assert not verdict.is_finding, verdict.summary()
    done = run_repro(write_repro(case, tmp_path / "repro"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "moves under eager's rounding noise" in done.stdout


def test_a_code_of_a_subnormal_value_is_no_evidence() -> None:
    """Below ``tiny`` eager's rounding is absolute (one subnormal step), not relative: a night's
    int-flip (torch 2.15, ``frexp(i1(addcmul(...)))[1]`` at the smallest subnormals, eager -148,
    compiled 0, float64 -149) was strong only because the nudge scaled with the value. Here
    ``frexp(x * 0.5)`` of ``x = 3 * 2**-149``: float64's exponent moves under a one-step nudge."""
    b = Builder(random.Random(0), "float32")
    x = b.input((8,))
    b.graph.outputs = [b.op("frexp", b.op("mul_scalar", x, value=0.5), pick=1)]
    args = [torch.full((8,), 3 * 2.0 ** -149)]
    verdict = _judged(b.graph, args, measure=True)
    assert verdict.kind == Kind.WEAK_FLIP, verdict.summary()
    normal = [torch.full((8,), 3.0)]  # the same program on normal values: stable, strong
    assert _judged(b.graph, normal, measure=True).kind == Kind.INT_FLIP

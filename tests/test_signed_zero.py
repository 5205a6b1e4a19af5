"""A zero of the wrong sign: a finding in a float output where the program defines the sign
(IEEE and eager agree: ``minimum``, ``neg``, ``copysign``, a product) and float64's exact zero
has eager's; not where an op may return either zero, nor where float64 is not exactly zero.
Planted compiled outputs, judged both ways; one real-Inductor check."""

from __future__ import annotations

import random

import pytest
import torch

from fuzzer.gen.grammar import Builder
from fuzzer.ir import render
from fuzzer.ir.graph import Graph
from fuzzer.judge import rules, semantics
from fuzzer.judge.kinds import Kind


def _judged(graph: Graph, args: list[torch.Tensor], flip_zeros: bool = True):
    """The verdict with compiled planted as eager with every zero's sign flipped."""
    trace = render.load(render.render_trace(graph), "trace")
    eager_values = trace(*args)
    fp64 = rules.float64_run(trace, args)
    out = graph.outputs[0]
    eager = eager_values[out]
    compiled = torch.where(eager == 0, -eager, eager) if flip_zeros else eager.clone()
    return semantics.judge_graph(graph, [eager], [compiled], fp64, eager_values)


def _binary(op: str) -> Graph:
    b = Builder(random.Random(0), "float32")
    b.graph.outputs = [b.op(op, b.input((4,)), b.input((4,)))]
    return b.graph


ZEROS = [torch.tensor([-0.0, 0.0, -0.0, 1.0]), torch.tensor([0.0, -0.0, -0.0, 2.0])]


@pytest.mark.parametrize("op", ["minimum", "maximum", "mul", "copysign"])
def test_a_flipped_zero_sign_where_it_is_defined_is_a_finding(op: str) -> None:
    verdict = _judged(_binary(op), ZEROS)
    assert verdict.kind == Kind.SIGNED_ZERO, verdict.summary()
    count = verdict.outputs[0].details.count
    assert count >= 1
    # the one line a night's log and a summary show says how many (it once ended at the colon)
    assert verdict.summary() == f"signed-zero in output 0 (float32): {count} elements"
    assert _judged(_binary(op), ZEROS, flip_zeros=False).kind == Kind.OK


def test_no_finding_where_an_op_may_return_either_zero() -> None:
    """``amax`` of [-0.0, 0.0] may be either zero: its sign is not the program's to define."""
    b = Builder(random.Random(0), "float32")
    b.graph.outputs = [b.op("amax", b.op("mul", b.input((4,)), b.input((4,))), dim=0)]
    args = [torch.tensor([-0.0, 0.0, -0.0, 0.0]), torch.tensor([1.0, 1.0, 1.0, 1.0])]
    assert not semantics.zero_signs_defined(b.graph, b.graph.outputs[0])
    assert _judged(b.graph, args).kind != Kind.SIGNED_ZERO


def test_no_finding_where_float64_is_not_exactly_zero() -> None:
    """``-1e-30 * 1e-30`` underflows to -0.0 in float32 but is a tiny negative in float64: the
    zero is a rounding, and its sign is noise, not a defined result."""
    args = [torch.tensor([-1e-30, 1e-30]), torch.tensor([1e-30, 1e-30])]
    b = Builder(random.Random(0), "float32")
    b.graph.outputs = [b.op("mul", b.input((2,)), b.input((2,)))]
    assert _judged(b.graph, args).kind != Kind.SIGNED_ZERO


def test_the_rule_sees_what_a_tolerance_cannot() -> None:
    """-0.0 == 0.0: the float rules alone call the flipped output ok."""
    eager, compiled = torch.tensor([-0.0, 1.0]), torch.tensor([0.0, 1.0])
    ref = eager.double()
    assert rules.output_kind(eager, compiled, ref, 1e-4) == "ok"
    assert rules.output_kind(eager, compiled, ref, 1e-4, signs=True) == "signed-zero"


def _copysign_of(sign: str) -> Graph:
    """``copysign(z, s)`` with ``s`` an input (``sign="given"``) or ``x * y`` (``"product"``)."""
    b = Builder(random.Random(0), "float32")
    z = b.input((4,))
    s = b.input((4,)) if sign == "given" else b.op("mul", b.input((4,)), b.input((4,)))
    b.graph.outputs = [b.op("copysign", z, s)]
    return b.graph


def test_a_zero_signed_by_a_nan_that_arithmetic_made_is_no_finding() -> None:
    """A night's signed-zero (torch 2.15, ``signs``): ``copysign(x4, maximum(x0, x1) * -0.0)``
    where ``x1`` held NaN, so the sign came from ``NaN * -0.0``, a NaN whose sign IEEE leaves
    unspecified; eager and compiled gave different zeros and both are right. Only the elements
    whose sign a real product decides are judged, and a NaN the caller passed in keeps its
    sign (``copysign`` copies it)."""
    zeros = torch.zeros(4)
    inf, nan = float("inf"), float("nan")
    mixed = [zeros, torch.tensor([inf, -1.0, inf, 2.0]), torch.tensor([0.0, 1.0, 0.0, 3.0])]
    verdict = _judged(_copysign_of("product"), mixed)
    assert verdict.kind == Kind.SIGNED_ZERO and verdict.outputs[0].details.count == 2
    only_nans = [zeros, torch.full((4,), inf), torch.zeros(4)]
    assert _judged(_copysign_of("product"), only_nans).kind == Kind.OK
    given = [zeros, torch.tensor([-nan, nan, -nan, nan])]
    assert _judged(_copysign_of("given"), given).kind == Kind.SIGNED_ZERO


@pytest.mark.parametrize("op,ieee_negative", [("minimum", True), ("maximum", False)])
def test_a_tie_of_zeros_is_judged_only_where_eager_gives_ieees_zero(
        op: str, ieee_negative: bool) -> None:
    """``minimum(-0.0, +0.0)`` is -0.0 by IEEE and ``maximum`` +0.0; eager's scalar and vector
    paths do not always agree with it (upstream makes compiled follow IEEE, PR #194472). A
    flipped zero at the tie is a finding where eager gave IEEE's zero, and none elsewhere."""
    ties = [torch.tensor([-0.0, 0.0, -0.0, 0.0]), torch.tensor([0.0, -0.0, 0.0, -0.0])]
    eager = getattr(torch, op)(*ties)
    follows = torch.signbit(eager) == ieee_negative
    verdict = _judged(_binary(op), ties)
    assert (verdict.kind == Kind.SIGNED_ZERO) == bool(follows.any()), verdict.summary()
    if follows.any():
        assert verdict.outputs[0].details.count == int(follows.sum())

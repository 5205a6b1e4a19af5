"""The shrinker alone: every pass against a plain Python predicate, no worker, no compiler.

Each test builds a small case, gives the shrinker a predicate that says what must survive, runs
one pass (or the whole fixpoint) and checks what the pass removed, and that it left what the
predicate protects. The budget, the stall stop and the per-pass accounting are checked the same
way.
"""

from __future__ import annotations

import random

import pytest
import torch

from fuzzer.corpus.case import Case
from fuzzer.gen.grammar import Builder
from fuzzer.judge.details import Element
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import OutputVerdict, Verdict
from fuzzer.reduce.shrinker import Budget, BudgetExhausted, Shrinker
from fuzzer.reduce.size import size_key


def case_of(b: Builder, dtype: str = "float32", **values: torch.Tensor) -> Case:
    """The builder's graph as a case, its first output the target, inputs ``values`` or ones."""
    graph = b.graph
    inputs = {str(n): values.get(str(n), torch.linspace(-1, 1, max(1, torch.Size(
        graph.node(n).shape).numel())).reshape(graph.node(n).shape).to(
        getattr(torch, graph.node(n).dtype))) for n in graph.input_ids()}
    out = graph.outputs[0]
    verdict = Verdict(Kind.INT_FLIP, 0, out, [OutputVerdict(0, out, Kind.INT_FLIP, "uint8")])
    return Case(graph=graph, inputs=inputs, dtype=dtype, verdict=verdict)


def ops_in(case: Case) -> list[str]:
    return case.graph.op_names()


def test_drop_other_outputs_keeps_the_target_alone() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    b.graph.outputs = [b.op("e8m0", b.op("erf", x), eps=1e-30), b.op("sigmoid", x)]
    case = case_of(b)
    shrinker = Shrinker(case, lambda c: "erf" in ops_in(c))
    assert shrinker.drop_other_outputs()
    assert shrinker.best.graph.outputs == [case.graph.outputs[0]]
    assert ops_in(shrinker.best) == ["erf", "e8m0"]


def test_cut_to_eager_values_replaces_the_chain_above_the_cause() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    head = b.op("e8m0", b.op("erf", b.op("tanh", b.op("mul_scalar", x, value=3.0))), eps=1e-30)
    b.graph.outputs = [head]
    case = case_of(b)
    shrinker = Shrinker(case, lambda c: "erf" in ops_in(c))
    assert shrinker.cut_to_eager_values()
    assert ops_in(shrinker.best) == ["erf", "e8m0"]
    (cut,) = shrinker.best.inputs.values()  # the erf now reads what tanh gave in eager
    assert torch.equal(cut, torch.tanh(case.inputs[str(x)] * 3.0))


def test_bypass_nodes_drops_ops_that_only_pass_a_value_along() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    b.graph.outputs = [b.op("e8m0", b.op("erf", b.op("relu", b.op("sigmoid", x))), eps=1e-30)]
    shrinker = Shrinker(case_of(b), lambda c: "erf" in ops_in(c))
    assert shrinker.bypass_nodes()
    assert ops_in(shrinker.best) == ["erf", "e8m0"]


def test_slice_to_diverging_elements_keeps_the_element_the_verdict_names() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((64,))
    b.graph.outputs = [b.op("e8m0", b.op("erf", x), eps=1e-30)]
    case = case_of(b)
    marker = float(case.inputs[str(x)][37])
    case.verdict.outputs[0].details.elements = [Element([37])]
    shrinker = Shrinker(case, lambda c: marker in c.inputs[str(x)].tolist())
    assert shrinker.slice_to_diverging_elements()
    assert shrinker.best.inputs[str(x)].tolist() == [marker]


def test_halve_dimensions_keeps_the_half_that_matters() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((8, 8))
    b.graph.outputs = [b.op("e8m0", b.op("softmax", x, dim=-1), eps=1e-30)]
    case = case_of(b, **{"0": torch.zeros(8, 8)})
    case.inputs[str(x)][6, 1] = 5.0
    shrinker = Shrinker(case, lambda c: bool((c.inputs[str(x)] == 5.0).any()))
    while shrinker.halve_dimensions():
        pass
    assert tuple(shrinker.best.inputs[str(x)].shape) == (1, 1)


def test_widen_to_float32_drops_half_precision_when_it_does_not_matter() -> None:
    b = Builder(random.Random(0), "bfloat16")
    x = b.input((4,))
    b.graph.outputs = [b.op("e8m0", b.op("erf", x), eps=1e-30)]
    case = case_of(b, dtype="bfloat16")
    shrinker = Shrinker(case, lambda c: True)
    assert shrinker.widen_to_float32()
    assert shrinker.best.dtype == "float32"
    assert shrinker.best.graph.node(x).dtype == "float32"
    kept = Shrinker(case, lambda c: c.dtype == "bfloat16")  # where precision is the point
    assert not kept.widen_to_float32() and kept.best is case


def test_simplify_constants_and_inputs_round_what_does_not_matter() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    b.graph.outputs = [b.op("e8m0", b.op("mul_scalar", x, value=12345.678), eps=1e-30)]
    case = case_of(b)
    shrinker = Shrinker(case, lambda c: True)
    assert shrinker.simplify_constants() and shrinker.simplify_inputs()
    best = shrinker.best
    assert best.graph.node(best.graph.op_ids()[0]).attrs["value"] == 1.0
    assert torch.equal(best.inputs[str(x)], torch.zeros(4))
    assert size_key(best) < size_key(case)


def test_simplify_constants_keeps_an_infinite_constant() -> None:
    """``x.fill_(inf)`` (the state strategy writes infinities): no round number stands for it,
    and trying one must not fail (``round(inf)`` raises)."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    b.op("fill_", b.op("slice", x, index=((1, None, None),)), value=float("inf"))
    b.graph.outputs = [b.op("mul_scalar", b.current(x), value=0.5)]
    b.graph.infer()
    shrinker = Shrinker(case_of(b), lambda c: True)
    assert not shrinker.simplify_constants()


def test_the_fixpoint_ends_at_the_minimum_and_counts_every_pass() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 8))
    side = b.op("sigmoid", x)
    head = b.op("e8m0", b.op("erf", b.op("tanh", b.op("mul_scalar", x, value=40.0))), eps=1e-30)
    b.graph.outputs = [head, b.op("gt_scalar", side, value=0.5)]
    shrinker = Shrinker(case_of(b), lambda c: "erf" in ops_in(c))
    best = shrinker.shrink()
    assert ops_in(best) == ["erf", "e8m0"] and shrinker.fixpoint and not shrinker.stopped
    assert sum(s.calls for s in shrinker.stats.values()) == shrinker.calls
    assert sum(s.adopted for s in shrinker.stats.values()) >= 3
    assert shrinker.stats["drop_other_outputs"].adopted == 1


def test_a_stall_stops_the_shrinker_and_says_so() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((64,))
    b.graph.outputs = [b.op("e8m0", b.op("erf", b.op("tanh", x)), eps=1e-30)]
    shrinker = Shrinker(case_of(b), lambda c: False, stall=5)
    with pytest.raises(BudgetExhausted, match="stalled"):
        shrinker.shrink()
    assert shrinker.calls == 5 and not shrinker.fixpoint and shrinker.stopped is not None
    assert shrinker.stopped.budget == Budget.STALL and "stalled" in str(shrinker.stopped)
    budget = Shrinker(case_of(b), lambda c: False, max_calls=3, stall=None)
    with pytest.raises(BudgetExhausted, match="max-calls"):
        budget.shrink()
    assert budget.calls == 3


def float_case(b: Builder, kind: Kind = Kind.NONFINITE) -> Case:
    """The builder's graph as a case whose first (float) output diverges with ``kind``."""
    case = case_of(b)
    out = case.graph.outputs[0]
    case.verdict = Verdict(kind, 0, out, [OutputVerdict(0, out, kind, "float32")])
    return case


def shows_from_softmax(candidate: Case) -> bool:
    """A plain stand-in for the compiler: the softmax overflows, so the divergence shows on the
    softmax and on every node computed from it, and nowhere else."""
    graph, wanted = candidate.graph, candidate.verdict.node
    if wanted not in graph.outputs:
        return False
    upstream = graph.ancestors(wanted) | {wanted}
    return any(graph.node(n).op == "softmax" for n in upstream)


def test_output_earlier_node_makes_the_overflowing_softmax_the_output() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 8))
    soft = b.op("softmax", b.op("mul_scalar", x, value=100.0), dim=-1)
    b.graph.outputs = [b.op("add", soft, b.op("sigmoid", x))]
    case = float_case(b)
    shrinker = Shrinker(case, shows_from_softmax)
    assert shrinker.output_earlier_node()
    best = shrinker.best
    assert ops_in(best) == ["mul_scalar", "softmax"] and best.graph.outputs == [soft]
    assert shrinker.target.node == soft and shrinker.target.kind == Kind.NONFINITE
    assert size_key(best) < size_key(case)
    assert shrinker.calls == 3  # the one-op subgraphs first (mul_scalar, sigmoid), then softmax
    assert not shrinker.output_earlier_node()  # nothing earlier shows it: no progress


def test_output_earlier_node_tries_only_nodes_that_can_show_the_kind() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    flag = b.op("sign_int8", b.op("erf", x))  # an int8 node: it cannot show a NaN
    b.graph.outputs = [b.op("mul", b.op("cast", flag, to="float32"), b.op("sigmoid", x))]
    tried: list[int] = []
    shrinker = Shrinker(float_case(b), lambda c: tried.append(c.verdict.node) and False)
    assert not shrinker.output_earlier_node()
    graph = shrinker.best.graph
    assert tried and all(graph.node(n).dtype == "float32" for n in tried)
    assert flag not in tried
    flips = Shrinker(float_case(b, Kind.INT_FLIP), lambda c: tried.append(c.verdict.node) or True)
    assert flips.output_earlier_node() and flips.best.graph.outputs == [flag]


def test_output_earlier_node_runs_in_the_fixpoint_before_the_cuts() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 8))
    soft = b.op("softmax", b.op("mul_scalar", x, value=100.0), dim=-1)
    b.graph.outputs = [b.op("add", b.op("tanh", soft), b.op("sigmoid", x))]
    shrinker = Shrinker(float_case(b), shows_from_softmax)
    best = shrinker.shrink()
    assert ops_in(best) == ["softmax"] and shrinker.fixpoint  # the mul cut to its eager value
    assert shrinker.stats["output_earlier_node"].adopted == 1


def _final_x(case: Case) -> torch.Tensor:
    """What the case's program leaves in its first input (every candidate is a valid graph:
    rendering and running it is part of the check)."""
    from fuzzer.execute import calling
    from fuzzer.ir import render

    model = render.load(render.render_model(case.graph), "model")
    written = [i for i, n in enumerate(case.graph.input_ids())
               if n in case.graph.written_inputs()]
    values = calling.call(model, case.ordered_inputs(), written)[0]
    return values[len(case.graph.outputs)] if written else case.ordered_inputs()[0]


def test_drop_writes_removes_mutations_with_what_only_they_feed() -> None:
    """Three writes through views of one input; only the zeroing of its last row matters. The
    others go, with their view chains and operands, and every candidate is a valid program
    (no read of a version that no longer exists)."""
    b = Builder(random.Random(0), "float32")
    x, y = b.input((4, 4)), b.input((4,))
    b.op("exp_", b.op("slice", x, index=((0, 2, None),)))
    b.op("mul_", b.op("select", b.current(x), dim=1, index=0), b.op("sigmoid", y))
    b.op("setitem_scalar", b.current(x), index=((3, None, None),), value=0.0)
    b.graph.outputs = [b.op("sum", b.current(x), dim=0)]
    b.graph.infer()
    case = case_of(b)
    seen: list[Case] = []

    def keeps_the_zero_row(candidate: Case) -> bool:
        seen.append(candidate)
        return bool((_final_x(candidate)[3] == 0).all())

    shrinker = Shrinker(case, keeps_the_zero_row)
    assert shrinker.drop_writes()
    assert [op for op in ops_in(shrinker.best) if op != "reread"] == ["setitem_scalar", "sum"]
    assert len(shrinker.best.graph) == 2  # a reread renders as nothing: no op to read
    assert shrinker.best.graph.input_ids() == [x]  # y and its sigmoid went with the mul_
    assert len(seen) >= 2 and all(c.graph.written_inputs() in ([x], []) for c in seen)


def test_unpass_views_makes_a_passed_view_inside_unless_the_divergence_needs_it() -> None:
    """``forward(x0, x0[1:, 2:])``: where what must survive holds with the view made inside
    the function, it goes inside (one function to read); where it needs two arguments sharing
    storage (the failure: an overlap between arguments the compiler misses), the view stays
    passed."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4, 5))
    window = b.op("slice", x, index=((1, None, None), (2, None, None)), passed=True)
    b.op("mul_scalar_", x, value=2.0)
    b.graph.outputs = [b.op("sum", b.current(window), dim=0)]
    b.graph.infer()
    case = case_of(b)
    anything = Shrinker(case, lambda c: "sum" in ops_in(c))
    assert anything.unpass_views() and not anything.best.graph.passed_views()
    needs_it = Shrinker(case, lambda c: bool(c.graph.passed_views()))
    assert not needs_it.unpass_views() and needs_it.best.graph.passed_views() == [window]

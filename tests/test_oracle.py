"""The oracle: verdict classes on hand-made tensors, then through a worker with planted
divergences (fake compiled backends)."""

from __future__ import annotations

import math
import random

import pytest
import torch

from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import Task
from fuzzer.gen import inputs
from fuzzer.gen.grammar import Builder
from fuzzer.ir.graph import Graph
from fuzzer.judge import oracle
from fuzzer.judge.details import Agrees, Distance, Element
from fuzzer.judge.oracle import Head, judge
from fuzzer.judge.verdict import Verdict, most_severe


def head(ulps: torch.Tensor, strong: bool = True) -> Head:
    """Head evidence for hand-made outputs: these distances, uniformly strong (or weak)."""
    return Head(torch.zeros_like(ulps), ulps, torch.zeros_like(ulps),
                torch.full(ulps.shape, strong))

# ---------------------------------------------------------------- judge() on hand-made tensors


def test_uint8_plus_one_is_an_int_flip_with_evidence() -> None:
    eager = torch.tensor([[120, 127], [130, 7]], dtype=torch.uint8)
    compiled = eager.clone()
    compiled[0, 1] += 1
    ref = eager.clone()  # float64 computed the same code, so it sides with eager
    ulps = torch.tensor([[10.0, 3.5], [100.0, 1000.0]], dtype=torch.float64)
    verdict = judge([eager], [compiled], [ref], [head(ulps)], [42])
    assert verdict.kind == "int-flip" and verdict.is_finding
    assert (verdict.output, verdict.node) == (0, 42)
    d = verdict.outputs[0].details
    assert d.count == 1 and d.total == 4 and d.max_abs_diff == 1
    assert d.fp64_agrees == Agrees(eager=1, compiled=0, neither=0)
    assert d.min_ulps == d.max_ulps == 3.5
    assert d.elements == [Element([0, 1], 127, 128, 127, regresses=True, strong=True,
                                  distance=Distance(3.5, 0.0, 0.0))]
    assert d.to_dict()["elements"] == [{"index": [0, 1], "eager": 127, "compiled": 128,
                                        "fp64": 127, "regresses": True, "strong": True,
                                        "ulps": 3.5, "eager_noise_ulps": 0.0,
                                        "head_input_fp64": 0.0}]  # the case-file keys
    summary = verdict.summary()
    assert summary.startswith("int-flip") and "output 0 (uint8)" in summary
    assert "1/4 elements differ (1 strong evidence)" in summary
    assert "; 3.5 ulps from the boundary" in summary  # one value, not a range of one


def test_non_finite_boundary_distance_is_recorded_as_none_and_json_stays_strict() -> None:
    """float64 itself overflowed before the head: the distance is unknown, not NaN."""
    import json

    from fuzzer.cli import strict_json

    eager = torch.tensor([3, 5], dtype=torch.uint8)
    compiled = torch.tensor([3, 6], dtype=torch.uint8)
    ulps = torch.tensor([1.0, float("nan")], dtype=torch.float64)
    verdict = judge([eager], [compiled], [eager.clone()], [head(ulps)], [0])
    d = verdict.outputs[0].details
    assert d.max_ulps is None and d.elements[0].distance.ulps is None
    plain = d.to_dict()  # measured, not finite: the keys stay, holding None
    assert plain["elements"][0]["ulps"] is None and plain["max_ulps"] is None
    json.dumps(verdict.to_dict(), allow_nan=False)
    assert json.loads(strict_json({"v": [float("inf"), float("nan"), 1.5]})) == {
        "v": ["inf", "nan", 1.5]}


def test_int_flip_counts_every_element_and_caps_the_list() -> None:
    eager = torch.zeros(20, dtype=torch.int8)
    compiled = eager.clone()
    compiled[::2] = -3  # ten differing elements, |diff| 3
    ref = compiled.clone()
    ref[0] = 0  # float64 sides with eager on one, with compiled on nine
    verdict = judge([eager], [compiled], [ref], [None], [5])
    d = verdict.outputs[0].details
    assert verdict.kind == "int-flip"
    assert d.count == 10 and d.max_abs_diff == 3
    assert d.fp64_agrees == Agrees(eager=1, compiled=9, neither=0)
    assert len(d.elements) == oracle.MAX_ELEMENTS
    assert d.min_ulps is None and "min_ulps" not in d.to_dict()  # no boundary distances given


def test_bool_and_sign_flips_are_int_flips() -> None:
    eager = torch.tensor([True, False, True])
    compiled = torch.tensor([True, True, True])
    verdict = judge([eager], [compiled], [eager.clone()], [head(torch.ones(3).double())], [1])
    assert verdict.kind == "int-flip"
    assert verdict.outputs[0].details.max_abs_diff == 1


def test_discrete_difference_is_benign_when_compiled_matches_float64() -> None:
    eager = torch.tensor([3, 4, 5], dtype=torch.uint8)
    compiled = torch.tensor([3, 5, 5], dtype=torch.uint8)
    ref = compiled.clone()  # eager was the one off by one: compiled is more accurate
    verdict = judge([eager], [compiled], [ref], [head(torch.zeros(3).double())], [9])
    assert verdict.kind == "benign" and not verdict.is_finding
    assert "at least as close to float64" in verdict.outputs[0].details.reason


def test_inf_only_in_compiled_is_nonfinite() -> None:
    eager = torch.tensor([1.0, 2.0, 3.0])
    compiled = torch.tensor([1.0, math.inf, 3.0])
    verdict = judge([eager], [compiled], [eager.double()], [None], [3])
    assert verdict.kind == "nonfinite"
    d = verdict.outputs[0].details
    assert d.count == 1 and d.total == 3
    assert d.elements == [Element([1], 2.0, math.inf, 2.0)]
    assert d.to_dict()["elements"] == [{"index": [1], "eager": 2.0, "compiled": math.inf,
                                        "fp64": 2.0}]


def test_nan_only_in_compiled_is_nonfinite() -> None:
    eager = torch.ones(2, 3, dtype=torch.bfloat16)
    compiled = eager.clone()
    compiled[1, 2] = math.nan
    verdict = judge([eager], [compiled], [eager.double()], [None], [3])
    assert verdict.kind == "nonfinite"
    assert verdict.outputs[0].details.elements[0].index == [1, 2]


def test_nonfinite_needs_a_finite_float64() -> None:
    # Where float64 overflows too, compiled's inf is not the nonfinite kind.
    eager = torch.tensor([60000.0, 1.0], dtype=torch.float16)
    compiled = torch.tensor([math.inf, 1.0], dtype=torch.float16)
    ref = torch.tensor([math.inf, 1.0], dtype=torch.float64)
    assert judge([eager], [compiled], [ref], [None], [0]).kind != "nonfinite"


def test_eager_inf_compiled_finite_with_a_finite_float64_is_benign() -> None:
    eager = torch.tensor([math.inf, 1.0], dtype=torch.float16)
    compiled = torch.tensor([65504.0, 1.0], dtype=torch.float16)
    ref = torch.tensor([65500.0, 1.0], dtype=torch.float64)
    verdict = judge([eager], [compiled], [ref], [None], [0])
    assert verdict.kind == "benign" and not verdict.is_finding


def _noisy(ref: torch.Tensor, scale: float, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return ref * (1 + scale * torch.randn(ref.shape, generator=gen, dtype=torch.float64))


def test_float_compiled_closer_to_float64_is_ok() -> None:
    ref = torch.randn(256, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    eager = _noisy(ref, 0.05, 1).half()  # eager is 5% off: fails allclose against compiled
    compiled = ref.half()  # compiled rounds once from the exact value
    assert not torch.allclose(eager.double(), compiled.double(), rtol=1e-2, atol=1e-2)
    assert judge([eager], [compiled], [ref], [None], [0]).kind == "ok"


def test_float_compiled_far_from_float64_is_an_accuracy_finding() -> None:
    ref = torch.randn(256, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    eager = ref.float()
    compiled = _noisy(ref, 0.05, 2).float()
    verdict = judge([eager], [compiled], [ref], [None], [0])
    assert verdict.kind == "accuracy"
    d = verdict.outputs[0].details
    assert d.rmse_compiled > 10 * d.rmse_eager
    assert d.max_abs_diff > 0


def test_the_most_severe_output_decides_the_case() -> None:
    f_eager = torch.ones(4)
    f_comp = torch.tensor([1.0, 1.0, math.inf, 1.0])
    i_eager = torch.tensor([1, 2], dtype=torch.uint8)
    i_comp = torch.tensor([1, 3], dtype=torch.uint8)
    verdict = judge([i_eager, f_eager], [i_comp, f_comp], [i_eager, f_eager.double()],
                    [None, None], [10, 20])
    assert verdict.kind == "nonfinite" and (verdict.output, verdict.node) == (1, 20)
    assert [o.kind for o in verdict.outputs] == ["weak-flip", "nonfinite"]  # one step, no head


def test_structural_mismatches_are_their_own_kind() -> None:
    e = torch.ones(3)
    assert judge([e, e], [e], [e.double()] * 2, [None] * 2, [0, 1]).kind == "meta"
    verdict = judge([e], [torch.ones(4)], [e.double()], [None], [0])
    assert verdict.kind == "meta" and "(4,)" in verdict.outputs[0].details.reason
    assert judge([e], [e.double()], [e.double()], [None], [0]).kind == "meta"  # dtype


def test_identical_outputs_are_ok() -> None:
    f = torch.randn(8, dtype=torch.bfloat16)
    i = torch.arange(8, dtype=torch.int32)
    verdict = judge([f, i], [f.clone(), i.clone()], [f.double(), i], [None, None], [0, 1])
    assert verdict.kind == "ok" and [o.kind for o in verdict.outputs] == ["ok", "ok"]


def test_most_severe_ranks_findings_over_ok_and_skip() -> None:
    kinds = ["ok", "skip", "accuracy", "timeout", "int-flip"]
    assert most_severe([Verdict(k) for k in kinds]).kind == "int-flip"
    assert most_severe([Verdict("skip"), Verdict("ok")]).kind == "ok"


def test_verdict_round_trips_through_a_plain_dict() -> None:
    eager = torch.tensor([1, 2], dtype=torch.uint8)
    verdict = judge([eager], [eager + 1], [eager], [head(torch.ones(2).double())], [3])
    verdict.draw, verdict.magnitude = 2, "boundary"
    back = Verdict.from_dict(verdict.to_dict())
    assert back == verdict and back.summary() == verdict.summary()


def test_bitwise_equal_treats_nan_positions_as_equal() -> None:
    a = torch.tensor([1.0, math.nan])
    assert oracle.bitwise_equal([a], [a.clone()])
    assert not oracle.bitwise_equal([a], [torch.tensor([math.nan, 1.0])])
    assert not oracle.bitwise_equal([a], [a.double()])


# ---------------------------------------------------------------- through a worker


def planted_graph() -> Graph:
    """h = linear(x): a uint8 E8M0 head on h, and a float16 output exp(h) + 0.25."""
    b = Builder(random.Random(0), "float16")
    h = b.linear(b.input((4, 64)), 64)
    head = b.op("e8m0", h, eps=1e-12)
    value = b.op("add_scalar", b.op("exp", h), value=0.25)
    b.graph.outputs = [head, value]
    return b.graph


def planted_task(backend: str) -> Task:
    graph = planted_graph()
    draws = inputs.draws(graph, 4, 2)  # magnitudes "normal" and "large"
    assert [m for m, _ in draws] == ["normal", "large"]
    return Task(graph=graph, draws=[draws[0][1]], magnitudes=["normal"],
                recipe=Recipe(backend), keep_outputs=True)


def test_worker_uint8_plus_one_is_an_int_flip(fake_runner) -> None:
    result = fake_runner.run(planted_task("tests.fakes:uint8_plus_one"))
    verdict = result.verdict
    assert verdict.kind == "int-flip", verdict.summary()
    assert verdict.output == 0 and verdict.node == planted_graph().outputs[0]
    d = verdict.outputs[0].details
    assert d.count == 1 and d.max_abs_diff == 1
    assert d.fp64_agrees == Agrees(eager=1, compiled=0, neither=0)
    assert d.elements[0].index == [0, 0] and d.elements[0].distance.ulps > 0
    assert verdict.outputs[1].kind == "ok"  # the float output was left alone
    assert verdict.draw == 0 and verdict.magnitude == "normal"
    outs = result.outputs
    assert int(outs["compiled"][0][0, 0]) == int(outs["eager"][0][0, 0]) + 1


def test_worker_injected_inf_is_nonfinite(fake_runner) -> None:
    verdict = fake_runner.run(planted_task("tests.fakes:inject_inf")).verdict
    assert verdict.kind == "nonfinite", verdict.summary()
    assert verdict.output == 1
    assert verdict.outputs[1].details.elements[0].compiled == math.inf
    assert verdict.outputs[0].kind == "ok"


def test_worker_exp_overflow_is_nonfinite(fake_runner) -> None:
    verdict = fake_runner.run(planted_task("tests.fakes:exp_overflow")).verdict
    assert verdict.kind == "nonfinite" and verdict.output == 1
    assert verdict.outputs[1].details.count > 1  # every exp input above 1


def test_worker_more_accurate_compiled_is_no_finding(fake_runner) -> None:
    result = fake_runner.run(planted_task("tests.fakes:more_accurate"))
    verdict = result.verdict
    assert verdict.kind in ("ok", "benign") and not verdict.is_finding, verdict.summary()
    outs = result.outputs
    # Not vacuous: compiled really differs from eager (it rounds once, eager after every op) ...
    assert not torch.equal(outs["compiled"][1], outs["eager"][1])
    # ... and is at least as close to float64.
    ref = outs["fp64"][1]
    err_c = (outs["compiled"][1].double() - ref).abs().sum()
    err_e = (outs["eager"][1].double() - ref).abs().sum()
    assert err_c <= err_e


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_worker_faithful_backends_are_ok(fake_runner, backend: str) -> None:
    verdict = fake_runner.run(planted_task(backend)).verdict
    assert verdict.kind == "ok" and [o.kind for o in verdict.outputs] == ["ok", "ok"]


def test_nan_converted_to_an_integer_is_not_compared() -> None:
    """C++ leaves float->int of NaN undefined: eager 0 vs compiled -128 is no finding."""
    eager = torch.zeros(4, dtype=torch.int8)
    compiled = torch.tensor([-128, -128, 0, 5], dtype=torch.int8)
    undefined = torch.tensor([True, True, False, False])
    verdict = judge([eager], [compiled], [eager.clone()], [None], [0], [undefined])
    assert verdict.kind == "int-flip" and verdict.outputs[0].details.count == 1  # 5: strong
    compiled[3] = 0
    assert judge([eager], [compiled], [eager.clone()], [None], [0], [undefined]).kind == "ok"


def test_runner_marks_nan_casts_undefined_and_judges_argmax_outputs() -> None:
    from fuzzer.execute.runner import Programs
    from fuzzer.judge import semantics
    from fuzzer.judge.rules import float64_run

    b = Builder(random.Random(0), "float32")
    x = b.input((2, 3))
    nan_source = b.op("sqrt", x)  # NaN wherever x < 0
    cast = b.op("call", nan_source, target="Tensor.to", args=[{"in": 0}, {"dtype": "int8"}],
                kwargs={})
    head = b.op("quant_int8", nan_source, scale=0.1, zero_point=0)
    index = b.op("call", x, target="torch.argmax", args=[{"in": 0}], kwargs={"dim": -1})
    b.graph.outputs = [cast, head, index, nan_source]
    programs = Programs.build(b.graph)
    x_value = torch.tensor([[1.0, -1.0, 4.0], [-2.0, 9.0, 20000.0]], dtype=torch.float64)
    values = float64_run(programs.trace, [x_value])
    cast_mask, head_mask, index_mask, float_mask = semantics.undefined_elements(b.graph, values)
    assert cast_mask.tolist() == [[False, True, False], [True, False, True]]  # NaN; sqrt(2e4) > 127
    assert head_mask.tolist() == [[False, True, False], [True, False, False]]  # clamped: NaN only
    # An argmax is judged by what it selects (tests/test_vocabulary.py), not left out.
    assert index_mask is None and float_mask is None


def test_a_captured_int_cast_reports_its_distance_from_the_integers() -> None:
    from fuzzer.execute.runner import Programs
    from fuzzer.judge import semantics
    from fuzzer.judge.rules import float64_run

    b = Builder(random.Random(0), "float32")
    x = b.input((3,))
    cast = b.op("call", x, target="Tensor.to", args=[{"in": 0}, {"dtype": "int8"}], kwargs={})
    b.graph.outputs = [cast]
    programs = Programs.build(b.graph)
    x_value = torch.tensor([2.0, 2.5, 3.0 - 2.0 ** -20], dtype=torch.float64)
    values = float64_run(programs.trace, [x_value])
    (found,) = semantics.heads(b.graph, values, values)
    ulps = found.ulps
    assert ulps[0] == 0 and ulps[1] > 1e5 and 1 <= ulps[2] <= 8


# ---------------------------------------------------------------- the rules, by hand


def test_evidence_in_exact_ulps_against_eagers_own_error() -> None:
    """float32 at 0.5: one ulp is 2**-24 above (nextafter). Eager is 1, 1 and 0.5 ulps off, so
    its noise (the 99th percentile over the tensor) is 1 ulp everywhere. float64 10 ulps from
    the boundary is strong (10 > 4 x 1); 3 ulps is within 4x eager's noise: weak; half an ulp is
    weak whatever eager did."""
    from fuzzer.judge import rules

    ulp = 2.0 ** -24
    point = torch.full((3,), 0.5, dtype=torch.float64)
    x = point + torch.tensor([10 * ulp, 3 * ulp, 0.5 * ulp], dtype=torch.float64)
    eager = (x + torch.tensor([ulp, ulp, 0.0], dtype=torch.float64)).float()
    ulps, eager_ulps, strong = rules.evidence(x, point, eager, torch.float32)
    assert ulps.tolist() == [10.0, 3.0, 0.5] and eager_ulps.tolist() == [1.0, 1.0, 1.0]
    assert strong.tolist() == [True, False, False]
    assert float(rules.spacing(torch.tensor([0.5], dtype=torch.float64), torch.float32)) == ulp


def test_one_lucky_exact_element_does_not_make_eagers_rounding_precise() -> None:
    """Eager hit float64 exactly at the flipping element, but is 20 ulps off elsewhere in the
    same head input: a flip 10 ulps from the boundary is within that noise, so weak."""
    from fuzzer.judge import rules

    ulp = 2.0 ** -24
    x = torch.full((200,), 0.5 + 10 * ulp, dtype=torch.float64)
    eager = (x + 20 * ulp).float()
    eager[0] = float(x[0])  # the one element that flips: eager exact there
    ulps, noise, strong = rules.evidence(x, torch.full_like(x, 0.5), eager, torch.float32)
    assert float(ulps[0]) == 10.0 and float(noise[0]) == 20.0 and not bool(strong[0])
    alone = rules.evidence(x[:1], torch.full((1,), 0.5, dtype=torch.float64), eager[:1],
                           torch.float32)
    assert bool(alone[2][0])  # judged by that element alone it would have looked strong


def test_head_evidence_through_the_registrys_boundary_for_sign() -> None:
    """sign flips at zero: float64 at 3 ulps of bfloat16's smallest normal above zero is far
    in ulps of the value itself (distance over spacing at the larger of x and the point)."""
    from fuzzer.ir import ops
    from fuzzer.judge import rules

    x = torch.tensor([1e-3, -2.0], dtype=torch.float64)
    own = x.to(torch.bfloat16)
    _, ulps, _, strong = rules.head_evidence([x], own, ops.sign_boundary, {}, (2,),
                                             torch.bfloat16)
    spacing = rules.spacing(x.abs(), torch.bfloat16)
    assert torch.equal(ulps, x.abs() / spacing)
    assert strong.tolist() == [bool((x.abs() > 4 * (own.double() - x).abs())[i]) for i in range(2)]


def test_compiled_closer_on_every_element_is_no_finding_under_either_policy_but_parity() -> None:
    eager = torch.tensor([3, 4, 5, 6], dtype=torch.int8)
    compiled = torch.tensor([2, 4, 5, 7], dtype=torch.int8)
    ref = torch.tensor([2.0, 4.0, 5.0, 7.0], dtype=torch.float64)
    default = judge([eager], [compiled], [ref], [head(torch.full((4,), 50.0).double())], [0])
    assert default.kind == "benign" and not default.is_finding
    parity = judge([eager], [compiled], [ref], [head(torch.full((4,), 50.0).double())], [0],
                   policy="parity")
    assert parity.kind == "parity" and parity.is_finding
    d = parity.outputs[0].details
    assert (d.regressing, d.benign, d.evidence) == (0, 2, "none")
    assert "0 regress, 2 are at least as close" in parity.summary()


def test_one_far_regressing_element_is_strong_and_a_near_one_is_weak() -> None:
    eager = torch.tensor([10, 20, 30], dtype=torch.uint8)
    compiled = torch.tensor([10, 21, 30], dtype=torch.uint8)
    ref = eager.double()
    far = Head(torch.zeros(3), torch.full((3,), 40.0).double(), torch.zeros(3).double(),
               torch.tensor([True] * 3))
    near = Head(torch.zeros(3), torch.full((3,), 0.3).double(), torch.ones(3).double(),
                torch.tensor([False] * 3))
    assert judge([eager], [compiled], [ref], [far], [0]).kind == "int-flip"
    weak = judge([eager], [compiled], [ref], [near], [0])
    assert weak.kind == "weak-flip" and not weak.is_finding
    assert judge([eager], [compiled], [ref], [near], [0], policy="parity").kind == "parity"
    two_steps = torch.tensor([10, 22, 30], dtype=torch.uint8)
    assert judge([eager], [two_steps], [ref], [near], [0]).kind == "weak-flip"  # fine scales
    assert judge([eager], [two_steps], [ref], [None], [0]).kind == "int-flip"  # no head known


def test_nonfinite_rules_against_float64() -> None:
    inf, nan = math.inf, math.nan
    eager = torch.tensor([inf, 1.0, 2.0, inf])
    ref = torch.tensor([inf, 1.0, inf, inf], dtype=torch.float64)
    hidden = torch.tensor([65000.0, 1.0, 2.0, inf])  # float64 and eager overflow: compiled hides it
    assert judge([eager], [hidden], [ref], [None], [0]).kind == "hidden-nonfinite"
    same_as_ref = torch.tensor([inf, 1.0, inf, inf])  # eager finite, compiled = float64's inf
    assert judge([eager], [same_as_ref], [ref], [None], [0]).kind == "benign"
    nan_ref = torch.tensor([nan], dtype=torch.float64)
    assert judge([torch.tensor([0.0])], [torch.tensor([nan])], [nan_ref], [None], [0]).kind == \
        "benign"
    # eager's own non-finite is the wrong one (-inf, nan) and compiled's is float64's: benign;
    # the other way round it is not
    ref2 = torch.tensor([inf, 0.5], dtype=torch.float64)
    wrong_sign = torch.tensor([-inf, 0.5])
    assert judge([wrong_sign], [torch.tensor([inf, 0.5])], [ref2], [None], [0]).kind == "benign"
    assert judge([torch.tensor([inf, 0.5])], [wrong_sign], [ref2], [None], [0]).kind == \
        "accuracy"


def test_a_head_fed_by_a_float_step_is_measured_where_the_step_jumps() -> None:
    """sign(ceil(x)): ceil's output is an integer, always whole ulps from sign's boundary at 0;
    the flip can only happen where x crosses an integer, so that is where float64 is measured."""
    from fuzzer.ir import ops
    from fuzzer.judge import semantics

    b = Builder(random.Random(0), "float32")
    x = b.input((3,))
    step = b.op("ceil", x)
    b.graph.outputs = [b.op("sign_int8", step)]
    at, boundary = semantics.evidence_source(b.graph, b.graph.outputs[0])
    assert (at, boundary) == (step, ops.to_int_boundary)
    values = torch.tensor([-0.9999999, 0.25, 3.0000002], dtype=torch.float64)
    fp64 = {x: values, step: torch.ceil(values)}
    (head_,) = semantics.heads(b.graph, fp64, {x: values.float(), step: torch.ceil(values).float()})
    assert torch.allclose(head_.x, values)  # ceil's input, not its integer output
    assert float(head_.ulps[1]) > 1e6 and float(head_.ulps[0]) < 2
    divided = b.op("truncdiv_scalar", x, value=0.3)
    b.graph.outputs = [b.op("e8m0", divided, eps=1e-12)]
    assert semantics.evidence_source(b.graph, b.graph.outputs[0]) == (divided,
                                                                   ops.multiple_boundary)
    assert float(ops.multiple_boundary([torch.tensor([0.62], dtype=torch.float64)],
                                       {"value": 0.3})[0]) == 0.6


def test_a_float_step_further_up_on_a_tie_makes_no_flip_strong() -> None:
    """e8m0(silu(round(x / 0.3))): the head input is far from any power of two, but where
    x / 0.3 sits within eager's noise of a half-integer compiled's round may jump, and silu
    carries the jump down to the head. One such element anywhere is enough."""
    from fuzzer.judge import semantics

    b = Builder(random.Random(0), "float32")
    x = b.input((3,))
    scaled = b.op("div_scalar", x, value=0.3)
    step = b.op("round", scaled)
    smooth = b.op("silu", step)
    b.graph.outputs = [b.op("e8m0", smooth, eps=1.0)]
    assert semantics.upstream_steps(b.graph, b.graph.outputs[0]) == [step]

    def heads_for(values: torch.Tensor) -> Head:
        fp64 = {x: values * 0.3, scaled: values, step: values.round()}
        fp64[smooth] = torch.nn.functional.silu(fp64[step])
        eager = {k: v.float() for k, v in fp64.items()}
        (found,) = semantics.heads(b.graph, fp64, eager)
        return found

    clear = heads_for(torch.tensor([1.2, 2.1, 3.3], dtype=torch.float64))
    tie = heads_for(torch.tensor([1.2, 2.1, 2.5 + 1e-9], dtype=torch.float64))
    assert bool(clear.strong.any()) and not bool(tie.strong.any())


@pytest.mark.parametrize("backend, finding", [("tests.fakes:ieee_pow", False),
                                              ("tests.fakes:ieee_pow_finite", True)])
def test_the_float64_reference_takes_pow_as_ieee_defines_it(fake_runner, backend: str,
                                                            finding: bool) -> None:
    """Eager's ``pow`` by +-0.5 takes a sqrt/rsqrt shortcut (pytorch#127163): nan at -inf where
    IEEE, and Inductor, give 0. A reference that took it too called the right compiled answer a
    finding (RESULTS §26); an answer wrong by IEEE too is still one."""
    b = Builder(random.Random(0), "float32")
    x = b.input((8,))
    b.graph.outputs = [b.op("pow_scalar", x, value=-0.5)]
    values = torch.tensor([-math.inf, -0.0, 4.0, 0.25, -math.inf, 1.0, 9.0, 2.0])
    result = fake_runner.run(Task(graph=b.graph, draws=[{str(x): values}],
                                  recipe=Recipe(backend), keep_outputs=True))
    assert result.verdict.is_finding == finding, result.verdict.summary()
    ref = result.outputs["fp64"][0]
    assert ref[0].item() == 0.0 and ref[1].item() == math.inf  # IEEE, not eager's nan, -inf
    assert math.isnan(result.outputs["eager"][0][0].item())  # eager still takes the shortcut

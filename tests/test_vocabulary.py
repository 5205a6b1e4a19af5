"""The vocabulary of issue 35 (``fuzzer/ir/ops/selection.py``, ``indexing.py``,
``vocabulary.py``) and the rule that judges index outputs by what they select
(``judge.semantics.selections``, ``rules.selection_codes``): planted compiled outputs judged
through ``semantics.judge_graph`` as ``tests/test_stability.py`` does, the generators reaching
the new ops, and two real-Inductor runs."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
import torch

from fuzzer.execute import runner
from fuzzer.execute.task import Task
from fuzzer.gen import edge, strategy
from fuzzer.gen.grammar import Builder
from fuzzer.ir import ops, render
from fuzzer.ir.graph import Graph
from fuzzer.judge import rules, semantics
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import Verdict


def _one(op: str, shape: tuple[int, ...], dtype: str = "float32", pre: str | None = None,
         **attrs: object) -> Graph:
    b = Builder(random.Random(0), dtype)
    x = b.input(shape)
    if pre is not None:
        x = b.op(pre, x, value=3.0)
    b.graph.outputs = [b.op(op, x, **attrs)]
    return b.graph


def _judged(graph: Graph, args: list[torch.Tensor],
            plant: Callable[[torch.Tensor], None]) -> Verdict:
    """The verdict with compiled = eager's output changed in place by ``plant``."""
    trace = render.load(render.render_trace(graph), "trace")
    eager_values = trace(*args)
    fp64 = rules.float64_run(trace, args)
    out = graph.outputs[0]
    compiled = eager_values[out].clone()
    plant(compiled)
    return semantics.judge_graph(graph, [eager_values[out]], [compiled], fp64, eager_values,
                                 nudged=lambda: runner.nudged_runs(graph, args))


ROWS = torch.tensor([[3.0, 1.0, 2.0, 1.0, 5.0], [0.5, 0.25, 7.0, -1.0, 0.0]])


def test_a_compiled_argmin_picking_a_larger_element_is_a_finding() -> None:
    def plant(c: torch.Tensor) -> None:
        c[1] = 2  # 7.0 where the minimum is -1.0 (index 3)

    verdict = _judged(_one("argmin", (2, 5), dim=1, keepdim=False), [ROWS], plant)
    assert verdict.kind == Kind.INT_FLIP, verdict.summary()
    (element,) = verdict.outputs[0].details.elements
    assert (element.eager_index, element.compiled_index, element.fp64_index) == (3, 2, 3)
    assert element.distance.head_input_fp64 == 7.0 and element.strong


def test_a_later_index_among_exactly_equal_values_breaks_the_first_index_rule() -> None:
    """torch documents argmin's first minimal index: the other 1.0 of row 0 (an input no op
    rounded, so the tie is exact everywhere) is a finding, said as such."""
    def plant(c: torch.Tensor) -> None:
        c[0] = 3  # the other 1.0 of row 0: the same value, a later index

    verdict = _judged(_one("argmin", (2, 5), dim=1, keepdim=False), [ROWS], plant)
    assert verdict.kind == Kind.INT_FLIP, verdict.summary()
    (element,) = verdict.outputs[0].details.elements
    assert element.fault == "not the first of equal values" and element.strong
    assert (element.compiled_index, element.fp64_index, element.selected) == (3, 1, [1.0] * 3)


def test_a_tie_that_float_noise_made_is_no_divergence() -> None:
    """``x * 3`` rounds: equal values there may be unequal in another rounding, so which of
    them compiled's argmin names is not judged (the issue template: ties are no finding)."""
    graph = _one("argmin", (2, 5), pre="mul_scalar", dim=1, keepdim=False)

    def plant(c: torch.Tensor) -> None:
        c[0] = 3  # the other 3.0 of row 0

    assert _judged(graph, [ROWS], plant).kind == Kind.OK


def test_a_sort_without_a_documented_order_leaves_exact_ties_open() -> None:
    """torch documents no order among median's or topk's equal values: another index there is
    no divergence even on an exact tie."""
    x = torch.tensor([[4.0, 4.0, 1.0, 0.0, 4.0, -2.0]])
    topk = _one("topk", (1, 6), k=1, dim=1, largest=True, pick=1)
    assert _judged(topk, [x], lambda c: c.fill_(4)).kind == Kind.OK


def test_compiled_argmin_of_uint8_naming_index_0_says_not_the_minimum() -> None:
    """The cause behind issue 59: compiled's argmin of a uint8 row names index 0, whose value
    is not the minimum; and an index far out of range, as once seen, says so."""
    b = Builder(random.Random(0), "float32")
    x = b.input((1, 16), dtype="uint8")
    b.graph.outputs = [b.op("argmin", x, dim=1, keepdim=False)]
    args = [torch.arange(16, 0, -1).to(torch.uint8).reshape(1, 16)]
    for planted, fault in ((0, "not the minimum"), (-3087562610450605308, "out of range")):
        verdict = _judged(b.graph, args, lambda c, p=planted: c.fill_(p))
        assert verdict.kind == Kind.INT_FLIP, verdict.summary()
        (element,) = verdict.outputs[0].details.elements
        assert element.fault == fault and element.strong, element
        assert (element.eager_index, element.compiled_index) == (15, planted)


def test_a_pick_within_eagers_noise_is_weak() -> None:
    """bf16 ``x * 3`` on 1 and 1 + 2^-7: float64 has 3 and 3.0234375, 1.5 bf16 ulps apart;
    eager rounds the second by half an ulp, so picking the first is within 4x its noise."""
    graph = _one("argmax", (2,), dtype="bfloat16", pre="mul_scalar", dim=0, keepdim=False)
    args = [torch.tensor([1.0, 1.0 + 2.0 ** -7], dtype=torch.bfloat16)]

    def plant(c: torch.Tensor) -> None:
        c.fill_(0)

    verdict = _judged(graph, args, plant)
    assert verdict.kind == Kind.WEAK_FLIP, verdict.summary()


def _sorted(stable: bool) -> Graph:
    return _one("sort", (6,), dim=0, descending=False, stable=stable, pick=1)


TIES = torch.tensor([2.0, 1.0, 1.0, 0.0, 5.0, 1.0])  # stable order: 3, 1, 2, 5, 0, 4


def _swap_equal(c: torch.Tensor) -> None:
    c[1], c[3] = int(c[3]), int(c[1])  # two 1.0s trade places


def test_a_stable_sort_swapping_equal_values_is_a_finding() -> None:
    verdict = _judged(_sorted(True), [TIES], _swap_equal)
    assert verdict.kind == Kind.INT_FLIP, verdict.summary()
    assert verdict.outputs[0].details.count == 2


def test_an_unstable_sort_may_order_equal_values_either_way() -> None:
    assert _judged(_sorted(False), [TIES], _swap_equal).kind == Kind.OK


def test_a_sort_placing_a_larger_value_first_is_a_finding() -> None:
    def plant(c: torch.Tensor) -> None:
        c[0], c[-1] = int(c[-1]), int(c[0])

    assert _judged(_sorted(False), [TIES], plant).kind == Kind.INT_FLIP


def test_topk_max_pool_and_cummax_indices_are_judged_by_what_they_select() -> None:
    x = torch.tensor([[4.0, 4.0, 1.0, 0.0, 4.0, -2.0]])

    def other_four(c: torch.Tensor) -> None:
        c[0, 0] = 4 if int(c[0, 0]) != 4 else 0

    topk = _one("topk", (1, 6), k=2, dim=1, largest=True, pick=1)
    assert _judged(topk, [x], other_four).kind == Kind.OK

    def the_one(c: torch.Tensor) -> None:
        c[0, 1] = 2

    assert _judged(topk, [x], the_one).kind == Kind.INT_FLIP
    pool = _one("max_pool2d_indices", (1, 1, 2, 2), kernel=2, stride=2, padding=0, dilation=1,
                ceil=False, pick=1)
    plane = torch.tensor([[[[1.0, 3.0], [3.0, 0.0]]]])
    for flat, kind in ((2, Kind.OK), (3, Kind.INT_FLIP)):
        def plant(c: torch.Tensor, flat: int = flat) -> None:
            c.fill_(flat)

        assert _judged(pool, [plane], plant).kind == kind
    cummax = _one("cummax", (6,), dim=0, pick=1)
    assert _judged(cummax, [x[0]], lambda c: c.__setitem__(1, 0)).kind == Kind.OK  # 4 == 4


def test_an_index_out_of_range_is_strong() -> None:
    def plant(c: torch.Tensor) -> None:
        c[0] = 99

    verdict = _judged(_one("argmax", (2, 5), dim=1, keepdim=False), [ROWS], plant)
    assert verdict.kind == Kind.INT_FLIP, verdict.summary()


def test_an_integer_argmax_is_exact() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((5,), dtype="int32")
    b.graph.outputs = [b.op("argmax", x, dim=0, keepdim=False)]
    args = [torch.tensor([3, 9, 9, -1, 8], dtype=torch.int32)]
    assert _judged(b.graph, args, lambda c: c.fill_(1)).kind == Kind.OK  # the first 9
    verdict = _judged(b.graph, args, lambda c: c.fill_(2))  # the other 9: not the first
    assert verdict.kind == Kind.INT_FLIP, verdict.summary()
    assert verdict.outputs[0].details.elements[0].fault == "not the first of equal values"
    verdict = _judged(b.graph, args, lambda c: c.fill_(4))  # 8 < 9
    assert verdict.outputs[0].details.elements[0].fault == "not the maximum"


def _captured(target: str, pick: int | None, args: list, kwargs: dict) -> Graph:
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 5))
    extra = {"pick": pick} if pick is not None else {}
    b.graph.outputs = [b.op("call", x, target=target, args=args, kwargs=kwargs, **extra)]
    return b.graph


def test_a_captured_call_is_judged_by_its_capturing_entry() -> None:
    argmin = _captured("torch.argmin", None, [{"in": 0}], {"dim": 1})
    topk = _captured("torch.topk", 1, [{"in": 0}, 2], {"dim": -1, "largest": False})
    for graph in (argmin, topk):
        assert semantics.is_index_output(graph.node(graph.outputs[0]))
        values = rules.float64_run(render.load(render.render_trace(graph), "trace"), [ROWS])
        assert semantics.undefined_elements(graph, values) == [None]

    def plant(c: torch.Tensor) -> None:
        c[1] = 2

    assert _judged(argmin, [ROWS], plant).kind == Kind.INT_FLIP
    assert _judged(topk, [ROWS], lambda c: c.__setitem__((0, 0), 3)).kind == Kind.OK  # a 1.0
    assert _judged(topk, [ROWS], lambda c: c.__setitem__((1, 0), 2)).kind == Kind.INT_FLIP


def test_a_captured_call_no_entry_reads_stays_undefined() -> None:
    """``topk(..., sorted=False)`` is not what the ``topk`` entry renders: its indices cannot be
    read, so they are left out of the verdict as before."""
    graph = _captured("torch.topk", 1, [{"in": 0}, 2], {"sorted": False})
    values = rules.float64_run(render.load(render.render_trace(graph), "trace"), [ROWS])
    (mask,) = semantics.undefined_elements(graph, values)
    assert mask is not None and bool(mask.all())
    assert _judged(graph, [ROWS], lambda c: c.__setitem__((1, 0), 2)).kind == Kind.OK
    values_out = _captured("torch.topk", 0, [{"in": 0}, 2], {})  # the values: a float output
    assert not semantics.is_index_output(values_out.node(values_out.outputs[0]))


def test_every_index_entry_says_where_its_indices_are() -> None:
    for name, spec in ops.REGISTRY.items():
        if spec.selects is None:
            continue
        inputs, attrs = spec.example
        assert spec.selects.pick is None or attrs.get("pick") == spec.selects.pick, name
        assert spec.exact, name  # a selection rounds nothing
        assert spec.selects.ordered_by is None or spec.selects.ordered_by in spec.attrs, name


def test_the_generators_reach_the_new_vocabulary() -> None:
    """The edge strategies draw the selections, scans, layouts, layers and index readers."""
    wanted = {*ops.tagged("select"), *ops.tagged("scan"), *ops.tagged("rearrange"),
              *ops.tagged("blend"), "signbit", "one_hot", "index_add", "scatter_add",
              "embedding_bag", "bmm", "baddbmm", "addmm", "conv1d", "conv_transpose2d",
              "max_pool2d_indices"}
    seen: set[str] = set()
    for body in (edge.special_body, edge.integer_body, edge.shapes_body):
        for seed in range(400):
            b = Builder(random.Random(seed), "float32")
            out, _ = body(b)
            seen |= set(b.graph.op_names())
    assert wanted <= seen, sorted(wanted - seen)
    assert {"special-functions", "integer", "shapes"} <= set(strategy.STRATEGIES)


@pytest.mark.parametrize("name,shape,attrs", [
    ("argmax", (4, 33), {"dim": 1, "keepdim": False}),
    ("sort", (3, 17), {"dim": -1, "descending": True, "stable": True, "pick": 1}),
])
def test_real_inductor_index_outputs_on_ties_are_no_finding(inductor_runner, name: str,
                                                            shape: tuple[int, ...],
                                                            attrs: dict) -> None:
    """Inductor's own argmax and stable sort on inputs full of ties (small integers as
    floats): whatever indices it returns among equal values, the verdict is no finding."""
    graph = _one(name, shape, **attrs)
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(-2, 3, shape, generator=gen).float()
    result = inductor_runner.run(Task(graph=graph, draws=[{str(graph.input_ids()[0]): x}]))
    assert not result.verdict.is_finding, result.verdict.summary()
    assert result.verdict.kind in (Kind.OK, Kind.BENIGN), result.verdict.summary()


def test_every_op_a_generator_places_says_what_to_draw_for_its_attrs() -> None:
    """``edge.place`` draws each attr from the entry's ``choices``."""
    for tag in ("select", "scan", "rearrange", "blend", "head", "decomp"):
        for name in ops.tagged(tag):
            spec = ops.spec(name)
            assert set(spec.attrs) <= set(spec.choices), (tag, name)


def test_a_repro_judges_an_index_output_by_what_it_selects(fake_runner, tmp_path) -> None:
    """A planted argmax one element off: the case's repro.py carries the selection rule and
    reproduces it; on a clean backend the same repro says it does not."""
    from fuzzer.corpus.case import Case
    from fuzzer.execute.recipe import Recipe
    from fuzzer.execute.task import Task
    from fuzzer.reduce.repro import write_repro
    from tests.conftest import run_repro

    b = Builder(random.Random(0), "float32")
    b.graph.outputs = [b.op("argmax", b.input((3, 7)), dim=1, keepdim=False)]
    inputs = {"0": torch.arange(21, dtype=torch.float32).reshape(3, 7).flip(1)}
    verdict = fake_runner.run(Task(graph=b.graph, draws=[inputs],
                                   recipe=Recipe("tests.fakes:next_index"))).verdict
    assert verdict.kind == Kind.INT_FLIP, verdict.summary()
    case = Case(graph=b.graph, inputs=inputs, recipe=Recipe("tests.fakes:next_index"),
                verdict=verdict)
    done = run_repro(write_repro(case, tmp_path / "planted"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "judged by the values they select" in done.stdout
    case.recipe = Recipe("eager")
    assert run_repro(write_repro(case, tmp_path / "clean")).returncode == 0


def test_a_stable_sort_out_of_order_says_so_not_the_first_index_rule() -> None:
    verdict = _judged(_sorted(True), [TIES], _swap_equal)
    faults = {e.fault for e in verdict.outputs[0].details.elements}
    assert faults == {"not in stable order"}, faults

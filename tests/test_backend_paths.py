"""Issue 35: what makes a backend take another path is generated, and each check can fail.

- layouts: every layout keeps shape and elements at every rank (``expanded`` repeats its first
  slice), stores them as it says where ``applies`` says so, leaves NaN in its gaps; a
  campaign's inputs, activations and weights, take them (channels-last and permuted among them),
  never ``expanded`` where the program writes the input or it is module state; intermediates are
  copied into other layouts; a case's layout survives save/load, replay and ``repro.py`` (a fake
  backend that diverges only on an input not stored contiguously shows it, and stays quiet on
  the same values stored contiguously);
- sizes: 1, w - 1, w, w + 1, 2w - 1 and 2w + 1 for w = 8, 16, 32, 64, empty dims, rank 5, the
  total bounded, and the edge programs' inputs drawn from them;
- integers at width: at least 16 elements, each type's minimum and maximum, through reductions,
  arg-reductions, scans, comparisons and casts;
- vision decompositions (every resampling, pooling and padding entry, ceil mode, padding left
  out of the count, non-integer scales, sizes that keep a dim, empty dims) and the patterns
  rewrites and constant folding match, in models and small programs alike.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import pytest
import torch

from fuzzer.campaign.settings import make_case
from fuzzer.corpus.case import Case
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.runner import Programs
from fuzzer.execute.task import Task
from fuzzer.gen import domains, edge, grammar, inputs, sizes, strategy
from fuzzer.gen.grammar import Builder
from fuzzer.ir import ops
from fuzzer.ir.graph import Graph
from fuzzer.judge.kinds import Kind
from fuzzer.reduce.repro import tensor_expression, write_repro
from tests.conftest import campaign_settings, run_repro

LAID_OUT = [layout for layout in domains.LAYOUTS if layout != "contiguous"]
STRIDED = ("transposed", "permuted", "channels_last", "strided", "sliced", "padded")


def _graphs(name: str, count: int, dtype: str = "float32") -> list[Graph]:
    return [strategy.generate(strategy.STRATEGIES[name], seed, "mixed", dtype)
            for seed in range(count)]


def _storage(t: torch.Tensor) -> torch.Tensor:
    """Every element of ``t``'s storage, gaps included."""
    return torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())


# ---------------------------------------------------------------- layouts


SHAPES = [(), (0,), (7,), (1, 9), (3, 0), (3, 4), (2, 3, 5), (2, 3, 4, 5), (1, 3, 1, 1),
          (2, 3, 2, 4, 3), (0, 3, 2, 2, 2)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_layout_keeps_shape_and_elements_at_every_rank(shape: tuple[int, ...]) -> None:
    base = torch.arange(math.prod(shape), dtype=torch.float32).reshape(shape)
    for layout in domains.LAYOUTS:
        laid = domains.lay_out(base, layout)
        assert laid.shape == base.shape, layout
        if layout == "expanded":  # the first slice along the first dim longer than 1, repeated
            dim = next((d for d, s in enumerate(shape) if s > 1), None)
            want = base if dim is None or 0 in shape else \
                base.narrow(dim, 0, 1).expand(shape)
            assert torch.equal(laid, want)
        else:
            assert torch.equal(laid, base), layout
        changed = not laid.is_contiguous() or laid.storage_offset() != 0
        assert changed == domains.applies(layout, shape), (layout, laid.stride())


def test_layouts_store_as_they_say_and_leave_nan_in_their_gaps() -> None:
    four, five = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5, 6)
    assert domains.lay_out(four, "channels_last").is_contiguous(
        memory_format=torch.channels_last)
    assert domains.lay_out(five, "channels_last").is_contiguous(
        memory_format=torch.channels_last_3d)
    assert domains.lay_out(four, "permuted").stride()[0] == 1  # the first dim innermost
    assert domains.lay_out(four, "transposed").stride()[-2] == 1
    assert domains.lay_out(four, "sliced").stride()[-2] == 3 * 5  # every third row
    assert domains.lay_out(four, "padded").stride()[-2] == 5 + 3  # rows three wider
    assert domains.lay_out(four, "strided").stride()[-1] == 2
    for layout in ("strided", "sliced", "padded", "offset"):
        storage = _storage(domains.lay_out(four, layout))
        assert storage.numel() > four.numel() and torch.isnan(storage).any(), layout
        ints = _storage(domains.lay_out(torch.zeros(3, 4, dtype=torch.int8), layout))
        assert (ints == 127).any(), layout  # an integer gap holds the type's maximum


def _drawn_layouts(cases: int) -> tuple[Counter, Counter]:
    """The layouts of a default campaign's first ``cases`` cases, by activation and weight,
    each drawn tensor checked to be stored as its node says."""
    settings = campaign_settings(out=Path("unused"), seed=35, draws=1)
    activations, weights = Counter(), Counter()
    for index in range(cases):
        case, task = make_case(settings, index)
        graph = case.graph
        written = set(graph.written_inputs())
        for node_id in graph.input_ids():
            node = graph.node(node_id)
            layout = node.attrs.get("layout", "contiguous")
            drawn = task.draws[0][str(node_id)]
            want = domains.lay_out(drawn.contiguous(), layout)
            assert (drawn.stride(), drawn.storage_offset()) == \
                (want.stride(), want.storage_offset()), (index, node_id, layout)
            if layout == "expanded":
                assert node_id not in written and "state" not in node.attrs, (index, node_id)
            (activations if node.role == "x" else weights)[layout] += 1
    return activations, weights


def test_a_campaigns_inputs_and_weights_take_every_layout() -> None:
    activations, weights = _drawn_layouts(300)
    assert set(LAID_OUT) <= set(activations), activations
    assert {"channels_last", "permuted", "transposed", "padded", "offset"} <= set(weights), \
        weights
    # Most inputs stay contiguous: a layout is one of several things a case varies.
    assert activations["contiguous"] > sum(activations.values()) / 3


def test_no_layout_is_given_where_it_would_make_an_eager_error() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((4, 6))
    b.graph.outputs = [b.op("exp", b.op("exp_", x))]  # writes x in place
    graph = b.graph
    assert "expanded" not in domains.layouts_for(graph, x, set(graph.written_inputs()))
    assert "expanded" in domains.layouts_for(graph, x)  # the same input, not written
    for seed in range(200):
        copy = graph.copy()
        domains.assign_layouts(copy, random.Random(seed), share=1.0, rate=1.0)
        assert copy.node(x).attrs["layout"] != "expanded"


def test_intermediates_are_copied_into_other_layouts() -> None:
    wanted = set(ops.tagged("relayout"))
    assert wanted == {"memory_format", "transposed_copy", "permuted_copy"}
    seen = Counter(op for name in ("models", "shapes", "vision-ops")
                   for g in _graphs(name, 150) for op in g.op_names() if op in wanted)
    assert set(seen) == wanted, seen
    b = Builder(random.Random(1), "float32")
    assert grammar.relayout(b, b.input((5,))) is None  # no layout to move a 1-d value into


@pytest.mark.parametrize("layout", [*LAID_OUT, "contiguous"])
def test_a_cases_layout_survives_save_load_and_replay(fake_runner, tmp_path: Path,
                                                      layout: str) -> None:
    """``nan_on_layout`` diverges only when an input arrives stored other than contiguously:
    the saved case, loaded and replayed, still diverges, and the contiguous one never does."""
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 3, 4, 5), layout=layout)
    b.graph.outputs = [b.op("exp", x)]
    draws = inputs.draws(b.graph, 3, 1, ("normal",))
    recipe = Recipe(backend="tests.fakes:nan_on_layout")
    task = Task(graph=b.graph, draws=[d for _, d in draws], magnitudes=["normal"],
                recipe=recipe)
    verdict = fake_runner.run(task).verdict
    diverges = layout != "contiguous"
    assert (verdict.kind == Kind.NONFINITE) == diverges, verdict.summary()
    case = Case(graph=b.graph, inputs=draws[0][1], recipe=recipe, verdict=verdict)
    back = Case.load(case.save(tmp_path / "case.pt"))
    given, kept = case.inputs[str(x)], back.inputs[str(x)]
    assert (kept.stride(), kept.storage_offset()) == (given.stride(), given.storage_offset())
    assert torch.equal(kept, given) and back.digest() == case.digest()
    again = fake_runner.run(Task(graph=back.graph, draws=[back.inputs], recipe=back.recipe))
    assert again.verdict.kind == verdict.kind


@pytest.mark.parametrize("layout", LAID_OUT)
def test_repro_rebuilds_each_layout_exactly(layout: str) -> None:
    """Non-finite values too, with nothing but ``torch`` in scope: the plain snippet borrows
    this expression and once wrote a bare ``nan`` it never defined (RESULTS §26)."""
    value = torch.randn(2, 3, 4, 5)
    value[0, 0, 0, :3] = torch.tensor([math.nan, math.inf, -math.inf])
    for dtype in (torch.float32, torch.int8, torch.bool):
        laid = domains.lay_out(value.to(dtype), layout)
        rebuilt = eval(tensor_expression(laid), {"torch": torch})  # noqa: S307
        torch.testing.assert_close(rebuilt, laid, rtol=0, atol=0, equal_nan=True)
        assert (rebuilt.stride(), rebuilt.storage_offset()) == \
            (laid.stride(), laid.storage_offset()), (layout, dtype)


@pytest.mark.parametrize("shape, stride, offset", [((1,), (2,), 0), ((3, 1), (1, 7), 0),
                                                   ((1,), (1,), 1), ((), (), 0)])
def test_repro_keeps_the_strides_of_size_one_dimensions_and_single_elements(shape, stride,
                                                                            offset) -> None:
    """``is_contiguous`` ignores a size-1 dimension's stride and a one-element tensor was
    written as a plain literal, but the compiler reads them: a shape (1,) input of stride 2
    crashed AOTAutograd on 2.11 where its repro.py, written with stride 1, did not (RESULTS §4)."""
    base = torch.arange(12.0)
    laid = base.as_strided(shape, stride, offset)
    rebuilt = eval(tensor_expression(laid), {"torch": torch})  # noqa: S307
    assert torch.equal(rebuilt, laid)
    assert (rebuilt.stride(), rebuilt.storage_offset()) == (laid.stride(), laid.storage_offset())


@pytest.mark.parametrize("layout", ["channels_last", "padded"])
def test_repro_py_of_a_laid_out_case_reproduces_it(fake_runner, tmp_path: Path,
                                                   layout: str) -> None:
    b = Builder(random.Random(0), "float32")
    x, w = b.input((2, 3, 4, 5), layout=layout), b.input((5,), "w")
    b.graph.outputs = [b.op("mul", b.op("exp", x), w)]
    draws = inputs.draws(b.graph, 5, 1, ("normal",))
    recipe = Recipe(backend="tests.fakes:nan_on_layout")
    task = Task(graph=b.graph, draws=[draws[0][1]], magnitudes=["normal"], recipe=recipe)
    verdict = fake_runner.run(task).verdict
    assert verdict.kind == Kind.NONFINITE
    case = Case(graph=b.graph, inputs=draws[0][1], recipe=recipe, verdict=verdict)
    done = run_repro(write_repro(case, tmp_path / "repro"))
    assert done.returncode == 1, done.stdout + done.stderr


# ---------------------------------------------------------------- sizes


def test_sizes_cross_every_vector_width_with_empty_dims_and_rank_five() -> None:
    rng = random.Random(0)
    shapes = [sizes.shape(rng) for _ in range(4000)]
    dims = {d for s in shapes for d in s}
    for w in sizes.WIDTHS:
        assert {w - 1, w, w + 1, 2 * w - 1, 2 * w + 1} <= dims, w
    assert {0, 1} <= dims
    assert {len(s) for s in shapes} == {1, 2, 3, 4, 5}
    assert all(math.prod(s) <= sizes.LIMIT for s in shapes)
    assert 0.05 < sum(0 in s for s in shapes) / len(shapes) < 0.2
    wide = [sizes.shape(rng, empty=0.0, at_least=16) for _ in range(500)]
    assert all(math.prod(s) >= 16 for s in wide)
    long = [sizes.long_shape(rng) for _ in range(200)]
    assert {n for s in long for n in s} >= set(sizes.LONG)
    assert all(math.prod(s) <= max(sizes.LONG_LIMIT, max(sizes.LONG)) for s in long)


def test_the_edge_programs_draw_their_shapes_at_the_widths() -> None:
    dims = Counter()
    for name in ("special-functions", "decimal", "integer", "shapes", "vision-ops"):
        for g in _graphs(name, 120):
            dims.update(d for n in g.input_ids() for d in g.node(n).shape)
    for w in sizes.WIDTHS:
        assert {w - 1, w + 1, 2 * w + 1} <= set(dims), w
    models = _graphs("models", 120)
    spatial = {g.node(g.input_ids()[0]).shape[-2] for g in models
               if len(g.node(g.input_ids()[0]).shape) == 4}
    assert {7, 9, 15, 17} <= spatial  # a model's rows end in a vector's tail too


# ---------------------------------------------------------------- integers at width


def test_integer_programs_are_wide_and_meet_each_types_extremes() -> None:
    picked = strategy.STRATEGIES["integer"]
    graphs = _graphs("integer", 200)
    seen, ends = Counter(), Counter()
    for seed, g in enumerate(graphs):
        first = g.node(g.input_ids()[0])
        assert math.prod(first.shape) >= edge.MIN_INT_ELEMENTS, first.shape
        seen.update(g.op_names())
        for domain, draw in inputs.draws(g, seed, 4, picked.cycle):
            if domains.INT_FOR[domain] != "extreme":
                continue
            for node_id in g.input_ids():
                t, node = draw[str(node_id)], g.node(node_id)
                if t.is_floating_point() or t.dtype == torch.bool or node.role != "x" \
                        or t.numel() < 2 or node.attrs.get("layout") == "expanded":
                    continue  # (an expanded input repeats its first slice)
                info = torch.iinfo(t.dtype)
                assert (t == info.min).any() and (t == info.max).any(), (seed, node_id)
                ends[node.dtype] += 1
    assert set(ends) >= {"int8", "uint8", "int16", "int32", "int64"}
    assert {"sum_dims", "prod", "amax_dims", "amin", "any", "all"} <= set(seen)
    assert len(set(ops.tagged("select")) & set(seen)) >= 8  # argmax, topk, sort, cummax …
    assert {"cumsum", "cumprod", "cast", "lt_scalar", "neg", "abs", "shl_scalar"} <= set(seen)
    assert {"lt", "le", "eq", "ne"} & set(seen) and "truncdiv_scalar" in seen


# ---------------------------------------------------------------- vision ops and rewrites


def test_vision_ops_reach_every_resampling_pooling_and_padding_variant() -> None:
    graphs = _graphs("vision-ops", 400)
    nodes = [(g, g.node(n)) for g in graphs for n in g.op_ids()]
    names = {node.op for _, node in nodes}
    wanted = {*ops.tagged("resample"), *ops.tagged("pool"), *ops.tagged("pad"),
              "interpolate_size"}
    assert wanted <= names, sorted(wanted - names)
    attrs = [node.attrs for _, node in nodes]
    assert any(a.get("ceil") is True for a in attrs)
    assert any(a.get("include_pad") is False for a in attrs)
    modes = {a["mode"] for _, n in nodes if n.op.startswith("interpolate") for a in [n.attrs]}
    assert {"nearest", "nearest-exact", "bilinear", "bicubic", "linear", "trilinear",
            "area"} <= modes
    scales = {s for a in attrs if "scale" in a
              for s in (a["scale"] if isinstance(a["scale"], tuple) else (a["scale"],))}
    assert any(s != int(s) for s in scales) and 1.0 in scales  # non-integer, and one kept
    kept_dim = [any(size == have for size, have in zip(n.attrs["size"], g.node(n.inputs[0])
                                                       .shape[2:]))
                for g, n in nodes if n.op == "interpolate_size"]
    assert any(kept_dim) and not all(kept_dim)
    inputs_ = [g.node(g.input_ids()[0]).shape for g in graphs]
    assert {len(s) for s in inputs_} == {3, 4, 5} and any(0 in s for s in inputs_)


def _rewritten(kind: str, dtype: str = "float32") -> tuple[Graph, int, int]:
    b = Builder(random.Random(0), dtype)
    x = b.input((3, 4), dtype=dtype)
    y = grammar._rewrite(b, x, kind)
    b.graph.outputs = [y]
    return b.graph, x, y


def test_each_rewrite_pattern_is_built_and_runs_on_special_values() -> None:
    special = torch.tensor([[math.inf, -math.inf, math.nan, -0.0], [0.0, 1.0, -2.5, 1e-40],
                            [3.0, -1.0, 0.5, 1e30]])
    for kind in grammar.REWRITES:
        graph, x, y = _rewritten(kind)
        assert y != x and len(graph) >= 1, kind
        draw = inputs.draws(graph, 0, 1, ("normal",))[0][1]
        draw[str(x)] = special
        out = Programs.build(graph).model(*inputs.ordered(graph, draw))[0]
        assert out.shape == special.shape, kind
    # Integer values take the patterns that keep their dtype; the float-only ones refuse.
    for kind in ("self_sub", "where_same", "transpose_twice", "same_cast", "idempotent",
                 "cumsum_last", "identity"):
        graph, x, y = _rewritten(kind, "int8")
        assert y != x, kind
    b = Builder(random.Random(0), "int8")
    x = b.input((3, 4), dtype="int8")
    refused = 0
    for _ in range(60):
        before = set(b.graph.node_ids())
        if grammar.rewrite(b, x) == x:  # refused: nothing of it is left behind
            assert set(b.graph.node_ids()) == before
            refused += 1
    assert 0 < refused < 60


def test_every_rewrite_keeps_the_float64_reference_in_float64() -> None:
    """A rewrite in a float16 model before a conv: its float64 reference must still run. A
    night's harness error (torch 2.15, ``models``): ``x.to(torch.float16)`` as the "same cast"
    turned the float64 reference back into float16, and the conv's float64 weights refused it
    ("Input type (c10::Half) and bias type (double) should be the same")."""
    from fuzzer.ir import render
    from fuzzer.judge import rules

    for kind in grammar.REWRITES:
        b = Builder(random.Random(0), "float16")
        x = b.input((1, 2, 5, 5))
        y = grammar._rewrite(b, x, kind)
        b.graph.outputs = [b.conv(y, 2, 3)]
        draw = inputs.draws(b.graph, 0, 1, ("normal",))[0][1]
        trace = render.load(render.render_trace(b.graph), "trace")
        wide = rules.float64_run(trace, inputs.ordered(b.graph, draw))
        assert wide[b.graph.outputs[0]].dtype == torch.float64, kind


def test_rewrites_reach_models_and_small_programs() -> None:
    assert grammar.hazard_rewrite in grammar.HAZARDS
    found = Counter()
    for name in ("models", "special-functions", "shapes", "vision-ops", "integer"):
        for g in _graphs(name, 200):
            ops_here = g.op_names()
            found[name] += any(op == "full_like" for op in ops_here) or any(
                g.node(n).op == "where" and g.node(n).inputs[1] == g.node(n).inputs[2]
                for n in g.op_ids()) or any(
                g.node(n).op == "sub" and g.node(n).inputs[0] == g.node(n).inputs[1]
                for n in g.op_ids())
    assert all(found[name] > 0 for name in found), found

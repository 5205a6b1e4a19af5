"""Discovery strategies: each input domain and strategy produces what it promises, every op of the
edge vocabulary renders, runs eager and compiles, and planted divergences that fire only on
subnormal inputs, only on an empty dim or only on an integer input are each found by a seeded
campaign within a stated number of cases."""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import pytest
import torch

from fuzzer.campaign.local import run_campaign
from fuzzer.campaign.settings import case_seed, make_case
from fuzzer.corpus.case import Case
from fuzzer.errors import InputError
from fuzzer.execute.task import Task
from fuzzer.execute.workers import LocalRunner
from fuzzer.gen import domains, inputs, strategy
from fuzzer.gen.grammar import Builder
from fuzzer.ir import ops
from fuzzer.ir.graph import Graph
from fuzzer.judge.verdict import Verdict
from tests.conftest import campaign_settings

FLOATS = (torch.float32, torch.bfloat16, torch.float16)


def _fill(name: str, dtype: torch.dtype, edges: tuple = (), n: int = 4096) -> torch.Tensor:
    gen = torch.Generator()
    gen.manual_seed(7)
    return domains.fill((n,), dtype, name, gen, edges)


# ---------------------------------------------------------------- input domains


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_domain_mixes_in_every_special_value(dtype: torch.dtype) -> None:
    t = _fill("special", dtype)
    info = torch.finfo(dtype)
    zero = t == 0
    assert t.dtype == dtype
    assert torch.isnan(t).any() and torch.isposinf(t).any() and torch.isneginf(t).any()
    assert (zero & torch.signbit(t)).any() and (zero & ~torch.signbit(t)).any()  # ±0.0
    assert ((t.abs() > 0) & (t.abs() < info.tiny)).any()  # subnormals
    assert (t.abs() == info.max).any() and (t.abs() == info.tiny).any()
    assert 0.6 < float(torch.isfinite(t).float().mean()) < 0.95  # mostly normal values


@pytest.mark.parametrize("dtype", FLOATS)
def test_overflow_domain_sits_at_the_dtype_overflow_edges(dtype: torch.dtype) -> None:
    t = _fill("overflow", dtype).double().abs()
    info = torch.finfo(dtype)
    assert torch.isfinite(t).all()
    assert (t >= info.max / 2).any()  # where a sum of two overflows
    for edge_value in (math.sqrt(info.max), math.log(info.max)):  # squares; exp, sinh, cosh
        assert ((t - edge_value).abs() <= edge_value * 8 * info.eps).any(), edge_value


@pytest.mark.parametrize("dtype", FLOATS)
def test_subnormal_domain_is_mostly_below_the_smallest_normal(dtype: torch.dtype) -> None:
    t = _fill("subnormal", dtype).abs()
    assert float(((t > 0) & (t < torch.finfo(dtype).tiny)).float().mean()) > 0.5


def test_decimal_domain_is_multiples_of_steps_no_float_holds() -> None:
    t = _fill("decimal", torch.float32).double()
    on_grid = torch.zeros_like(t, dtype=torch.bool)
    for step in domains.DECIMAL_STEPS:
        k = torch.round(t / step)
        on_grid |= (k * step).float().double() == t
    assert on_grid.all()
    inexact = torch.tensor([float(torch.tensor(v).float()) != v for v in (0.1, 0.3, 0.7)])
    assert inexact.all() and (t != torch.round(t)).any()


def test_integral_domain_holds_exact_integers_up_to_the_dtype_limit() -> None:
    t = _fill("integral", torch.float32).double()
    assert (t == torch.round(t)).all()
    assert (t.abs() > 2 ** 24 - 4).any() and (t.abs() <= 2 ** 24).all()


def test_edges_domain_draws_next_to_the_edges_of_the_op_an_input_feeds() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((256,))
    b.graph.outputs = [b.op("acosh", x)]
    assert inputs.edges_for(b.graph, x)[0] == 1.0
    drawn = inputs.draws(b.graph, 3, 1, ("edges",))[0][1][str(x)].double()
    near_one = (drawn - 1).abs() <= 4 * torch.finfo(torch.float32).eps
    assert near_one.sum() > 20 and (drawn == 1).any() and (drawn != 1).any()


def test_integer_domains_cover_wide_and_extreme_values() -> None:
    wide = _fill("large", torch.int64)  # a large draw uses the wide integers
    assert wide.dtype == torch.int64 and (wide.abs() > 2 ** 31).any()
    for dtype in (torch.int8, torch.uint8, torch.int32, torch.int64):
        extreme = _fill("special", dtype)
        info = torch.iinfo(dtype)
        assert extreme.dtype == dtype and (extreme == info.min).any() and \
            (extreme == info.max).any()
        small = _fill("normal", dtype)
        assert small.min() >= max(-10, info.min) and small.max() <= 10
    assert _fill("normal", torch.bool).dtype == torch.bool


def test_layouts_keep_shape_and_values_with_the_promised_strides() -> None:
    base = torch.arange(24.0).reshape(2, 3, 4)
    laid = {name: domains.lay_out(base, name) for name in domains.LAYOUTS}
    assert laid["contiguous"].is_contiguous()
    for name in ("transposed", "strided", "offset"):
        assert torch.equal(laid[name], base), name
    assert not laid["transposed"].is_contiguous() and laid["transposed"].stride()[-1] != 1
    assert laid["strided"].stride()[-1] == 2
    assert laid["offset"].storage_offset() == 1
    assert laid["expanded"].shape == base.shape and 0 in laid["expanded"].stride()


# ---------------------------------------------------------------- strategies


def _graphs(name: str, count: int = 60) -> list[Graph]:
    return [strategy.generate(strategy.STRATEGIES[name], seed, "mixed",
                              ("float32", "bfloat16", "float16")[seed % 3])
            for seed in range(count)]


def _inputs_dtypes(graph: Graph) -> set[str]:
    return {graph.node(n).dtype for n in graph.input_ids()}


def test_integer_strategy_builds_integer_and_bool_programs() -> None:
    graphs = _graphs("integer")
    assert all(_inputs_dtypes(g) & {"int8", "uint8", "int16", "int32", "int64", "bool"}
               for g in graphs)
    seen = set().union(*(_inputs_dtypes(g) for g in graphs))
    assert {"int8", "uint8", "int64", "bool"} <= seen
    ops_seen = Counter(op for g in graphs for op in g.op_names())
    for wanted in ("remainder", "shl_scalar", "arange_mul", "cast", "where", "mul"):
        assert any(op == wanted for op in ops_seen), wanted
    out_dtypes = {g.node(o).dtype for g in graphs for o in g.outputs}
    assert {"int64", "bool"} <= out_dtypes and out_dtypes & set(ops.FLOAT_DTYPES)


def test_shapes_strategy_draws_empty_unit_scalar_long_and_strided_inputs() -> None:
    graphs = _graphs("shapes", 120)
    shapes = [g.node(n).shape for g in graphs for n in g.input_ids()]
    assert any(0 in s for s in shapes) and any(s == () for s in shapes)
    assert any(s and all(d == 1 for d in s) for s in shapes)
    assert any(math.prod(s) > 4096 for s in shapes)  # long enough to split the reduction
    drawn = [t for g in graphs[:40] for _, d in inputs.draws(g, 1, 1, ("normal",)) for t in
             d.values()]
    strides = {"non-contiguous": any(not t.is_contiguous() for t in drawn),
               "expanded": any(0 in t.stride() and t.numel() > 1 for t in drawn),
               "offset": any(t.storage_offset() > 0 for t in drawn)}
    assert all(strides.values()), strides
    reductions = Counter(op for g in graphs for op in g.op_names()
                         if ops.spec(op).category == "reduce")
    assert {"var_c", "std_c", "logsumexp"} & set(reductions) and len(reductions) >= 6


def test_special_and_decimal_strategies_use_their_vocabularies() -> None:
    edge_ops = {n for n, s in ops.REGISTRY.items() if s.edges is not None} | \
        set(ops.tagged("blend"))  # lerp, addcmul …: fused forms beside the special functions
    assert all(set(g.op_names()) & (edge_ops | {"pow", "atan2", "hypot", "xlogy", "copysign",
                                                "fmax", "fmin", "logaddexp", "maximum",
                                                "minimum", "mul", "add", "sub", "div",
                                                "frexp", "round_decimals", "ldexp_scalar"})
               for g in _graphs("special-functions"))
    division = {"floordiv_scalar", "truncdiv_scalar", "remainder_scalar", "fmod_scalar",
                "floordiv", "remainder", "round_decimals", "round", "floor", "trunc", "ceil"}
    assert all(set(g.op_names()) & division for g in _graphs("decimal"))


def test_decompositions_strategy_chains_the_ops_the_compiler_rewrites() -> None:
    """Every program holds a ``decomp`` op, most of the family shows up in 200 programs (the
    losses with each reduction among them), and their inputs sit on the ops' thresholds."""
    family = set(ops.tagged("decomp"))
    graphs = _graphs("decompositions", 200)
    assert all(set(g.op_names()) & family for g in graphs)
    seen = Counter(op for g in graphs for op in g.op_names() if op in family)
    assert len(seen) >= 0.8 * len(family), sorted(family - set(seen))
    reductions = {g.node(n).attrs["reduction"] for g in graphs for n in g.op_ids()
                  if "reduction" in g.node(n).attrs}
    assert {"mean", "sum", "none"} <= reductions
    shrinks = [(g, g.node(n).inputs[0]) for g in graphs for n in g.op_ids()
               if g.node(n).op in ("hardshrink", "softshrink")]
    first = [(g, x) for g, x in shrinks if g.node(x).is_input]
    assert first and all(0.5 in inputs.edges_for(g, x) for g, x in first)
    assert strategy.STRATEGIES["decompositions"].cycle.count("edges") == 2


def test_cast_roundtrip_is_its_own_strategy() -> None:
    assert all("cast_roundtrip" in g.op_names() for g in _graphs("cast-roundtrip", 20))
    assert not any("cast_roundtrip" in g.op_names() for g in _graphs("models", 20))


def test_strategy_choice_is_deterministic_and_follows_the_weights() -> None:
    weights = strategy.parse_weights(["integer=2", "shapes=0"])
    picks = Counter(strategy.choose(case_seed(3, i), weights).name for i in range(3000))
    assert picks == Counter(strategy.choose(case_seed(3, i), weights).name
                            for i in range(3000))
    assert "shapes" not in picks and picks["cast-roundtrip"] > 0
    total = sum(w for w in weights.values())
    for name, weight in weights.items():
        if weight:
            assert abs(picks[name] / 3000 - weight / total) < 0.04, name
    assert set(strategy.parse_weights([], "vision")) == {"models", "cast-roundtrip",
                                                         "model-overflow"}


@pytest.mark.parametrize("bad", ["nonsense=1", "integer", "integer=x", "integer=-1",
                                 "integer=inf"])
def test_bad_strategy_weights_are_one_line_errors(bad: str) -> None:
    with pytest.raises(InputError):
        strategy.parse_weights([bad])
    with pytest.raises(InputError):
        strategy.parse_weights([f"{n}=0" for n in strategy.STRATEGIES])


def test_cases_record_their_strategy_and_draw_domains() -> None:
    settings = campaign_settings(out=Path("unused"), seed=5, draws=4)
    for index in range(200):
        case, task = make_case(settings, index)
        picked = strategy.STRATEGIES[case.origin["strategy"]]
        assert set(task.magnitudes) <= set(picked.cycle)
        for draw in task.draws:  # every draw can become a case file (a digest, a name)
            Case(graph=case.graph, inputs=draw).digest()
        if index < 30:
            again, _ = make_case(settings, index)
            assert again.graph.to_dict() == case.graph.to_dict()


# ---------------------------------------------------------------- the vocabulary compiles


def _vocabulary_graphs() -> dict[str, Graph]:
    """Every op of the edge vocabulary, a category per graph (one compile each)."""
    graphs = {}
    b = Builder(random.Random(0), "float32")
    x, y = b.input((2, 9)), b.input((2, 9))
    outs = [b.op(n, x) for n, s in ops.REGISTRY.items()
            if s.edges is not None and s.arity == 1 and not s.attrs]
    outs += [b.op("pow_scalar", x, value=-0.5), b.op("frexp", x, pick=1),
             b.op("ldexp_scalar", x, value=3), b.op("round_decimals", x, decimals=1)]
    outs += [b.op(n, x, y) for n in ops.tagged("binary-float") + ("remainder", "fmod", "truncdiv",
                                                         "lt", "le", "eq", "ne")]
    outs += [b.op(n, x, value=0.3) for n in ("remainder_scalar", "fmod_scalar", "mul_scalar",
                                            "div_scalar", "add_scalar", "floordiv_scalar",
                                            "truncdiv_scalar")]
    outs += [b.op(n, x) for n in ("floor", "ceil", "trunc", "round", "sign", "abs", "neg")]
    outs += [b.op("clamp", x, lo=-0.5, hi=0.5), b.op("floordiv", x, y),
             b.op("amax", x, dim=1), b.op("sum", x, dim=0)]
    b.graph.outputs = outs
    graphs["float"] = b.graph
    b = Builder(random.Random(0), "int32")
    i, j = b.input((2, 9), dtype="int32"), b.input((2, 9), dtype="int64", role="divisor")
    flag = b.op("lt_scalar", i, value=0)
    outs = [b.op(n, i, j) for n in ("bitwise_and", "bitwise_or", "bitwise_xor", "floordiv",
                                    "remainder", "true_divide")]
    outs += [b.op("shl_scalar", i, value=3), b.op("shr_scalar", i, value=2),
             b.op("bitwise_not", i), b.op("cast", i, to="int8"), b.op("own_dtype", i),
             b.op("where", flag, i, j),
             b.op("masked_fill", i, flag, value=-7), b.op("arange_mul", i, n=9, value=2**31 + 11),
             b.op("any", i, dim=1, keepdim=True), b.op("all", i, dim=0, keepdim=False),
             b.op("prod", i, dim=1, keepdim=False), b.op("cumsum", i, dim=1),
             b.op("neg", b.op("abs", b.input((9,), dtype="uint8")))]
    b.graph.outputs = outs
    graphs["integer"] = b.graph
    b = Builder(random.Random(0), "float32")
    x = b.input((3, 4, 5), layout="transposed")
    index = b.input((3, 2, 5), dtype="int64", role="index", bound=4)
    picks = b.input((2,), dtype="int64", role="index", bound=3)
    reduce = {"amin": {}, "amax_dims": {}, "sum_dims": {}, "mean_dims": {}, "logsumexp": {},
              "norm": {"p": 2.0}, "var_c": {"correction": 1}, "std_c": {"correction": 0},
              "var_mean": {"correction": 1, "pick": 0}, "std_mean": {"correction": 2, "pick": 1}}
    outs = [b.op(n, x, dims=(0, 2), keepdim=True, **extra) for n, extra in reduce.items()]
    outs += [b.op("cumprod", x, dim=2), b.op("gather", x, index, dim=1),
             b.op("index_select", x, picks, dim=0), b.op("embedding", b.input((6, 5)), picks),
             b.op("permute", x, dims=(2, 0, 1)), b.op("flip", x, dims=(1,)),
             b.op("slice_step", x, step=2), b.op("narrow", x, dim=1, start=1, length=2),
             b.op("chunk", x, chunks=2, dim=1, pick=1), b.op("contiguous", x),
             b.op("unsqueeze", x, dim=0), b.op("cat", x, x, dim=0),
             b.op("expand", b.input((1, 5)), size=(3, 5)),
             b.op("arange_step", x, start=0.0, end=0.45, step=0.1),
             b.op("linspace_mul", x, lo=-1.0, hi=1.0, n=5), b.op("full_like", x, value=0.1)]
    # Copies into another memory layout (``relayout``), read by a kernel after them.
    outs += [b.op("exp", b.op(n, x)) for n in ("transposed_copy", "permuted_copy")]
    outs.append(b.op("exp", b.op("memory_format", b.input((2, 3, 4, 5)),
                                 format="channels_last")))
    b.graph.outputs = outs
    graphs["layout"] = b.graph
    b = Builder(random.Random(3), "float32")
    x = b.input((1, 2, 5, 6))
    b.graph.outputs = [
        b.op("avg_pool2d_ex", x, kernel=3, stride=2, padding=1, ceil=True, include_pad=False),
        b.op("max_pool2d_ex", x, kernel=2, stride=1, padding=1, dilation=2, ceil=True),
        b.op("adaptive_max_pool2d", x, size=3),
        b.op("avg_pool1d", b.input((2, 3, 9)), kernel=3, stride=2, padding=1, ceil=True),
        *(b.op("interpolate_size", x, size=(7, 4), mode=mode, align=align)
          for mode, align in (("bilinear", True), ("bicubic", False), ("nearest-exact", None),
                              ("area", None)))]
    graphs["pool"] = b.graph
    b = Builder(random.Random(4), "float32")  # the pure entries that carry their own example
    b.graph.outputs = [_from_example(b, n) for n, s in ops.REGISTRY.items()
                       if s.example and not (s.statement or s.mutates or s.alias is not None)]
    graphs["examples"] = b.graph
    # The views and writes too, each on inputs of its own: a program with state (a dtype view
    # apart: it is judged by eager parity, a program of its own).
    b = Builder(random.Random(5), "float32")
    state = [n for n, s in ops.REGISTRY.items()
             if s.example and (s.statement or s.mutates or s.alias is not None) and not s.bits]
    b.graph.outputs = [b.current(_from_example(b, n)) for n in state]
    graphs["state"] = b.graph
    b = Builder(random.Random(6), "float32")
    b.graph.outputs = [_from_example(b, "view_dtype")]
    graphs["bits"] = b.graph
    return graphs


def _from_example(b: Builder, name: str) -> int:
    """Op ``name`` on fresh inputs as its registry entry's ``example`` says."""
    specs, attrs = ops.spec(name).example
    ids = [b.input(tuple(i["shape"]), i.get("role", "x"), dtype=i.get("dtype"),
                   **{k: v for k, v in i.items() if k not in ("shape", "role", "dtype")})
           for i in specs]
    return b.op(name, *ids, **attrs)


def test_every_new_op_renders_runs_eager_compiles_and_saves(fake_runner: LocalRunner,
                                                             tmp_path: Path) -> None:
    """Every op renders to code that eager runs, Dynamo and AOTAutograd trace (``aot_eager``),
    the judge judges and a case file keeps. Not Inductor: what Inductor makes of an op is what
    campaigns test (a compiler crash there is a finding), and its C++ compiles of these ten
    graphs cost 100 to 190 s with a cold cache, as CI has it (bench/RESULTS.md §38)."""
    from fuzzer.execute.recipe import Recipe

    covered = set()
    for name, graph in _vocabulary_graphs().items():
        covered |= set(graph.op_names())
        draws = inputs.draws(graph, 1, 1, ("normal",))
        task = Task(graph=graph, draws=[d for _, d in draws], magnitudes=["normal"],
                    recipe=Recipe(backend="aot_eager"))
        verdict = fake_runner.run(task).verdict
        assert verdict.kind not in ("crash", "skip", "timeout"), (name, verdict.summary())
        case = Case(graph=graph, inputs=draws[0][1], verdict=verdict)
        path = case.save(tmp_path / f"{name}.pt")
        back = Case.load(path)  # the same graph and inputs: a replay would compile it again
        assert back.digest() == case.digest() and back.graph.to_dict() == graph.to_dict()
    typed_by_torch = {n for n, s in ops.REGISTRY.items()  # every op whose dtype torch decides
                      if (s.infer is not None or s.edges is not None) and n != "call"}
    assert typed_by_torch <= covered, sorted(typed_by_torch - covered)


# ---------------------------------------------------------------- planted, found by campaigns


def _campaign(out: Path, backend: str, cases: int, seed: int) -> list[Case]:
    settings = campaign_settings(out=out, cases=cases, seed=seed, backend=backend, draws=4,
                                 timeout=60, dtypes=("float32", "bfloat16", "float16"))
    run_campaign(settings)
    return [Case.load(p) for p in sorted(out.glob("*.pt"))]


def _subnormal_input(case: Case) -> bool:
    return any(t.is_floating_point() and bool(((t.abs() > 0) &
                                               (t.abs() < torch.finfo(t.dtype).tiny)).any())
               for t in case.inputs.values())


# Each planted bug is found within this many cases of a default seeded campaign.
PLANTED = [
    ("nan_on_subnormal", 40, _subnormal_input, {"nonfinite"}),
    ("reshape_on_empty", 40, lambda c: any(0 in t.shape for t in c.inputs.values()), {"meta"}),
    ("off_by_one_on_int", 40, lambda c: any(not t.is_floating_point() and t.dtype != torch.bool
                                            for t in c.inputs.values()), {"int-flip"}),
]


@pytest.mark.parametrize("backend,cases,trigger,kinds", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_divergence_is_found_by_a_seeded_campaign(tmp_path: Path, backend: str,
                                                          cases: int, trigger, kinds) -> None:
    found = _campaign(tmp_path, f"tests.fakes:{backend}", cases, seed=1)
    assert any(case.verdict.kind in kinds for case in found), f"no finding in {cases} cases"
    for case in found:  # every finding is the planted one: it fires only on its trigger,
        if case.verdict.kind in kinds:
            assert trigger(case), case.verdict.summary()
        else:  # or Dynamo's own graph diverges already (bf16 addcdiv as div, mul and add)
            assert _diverges_under_dynamo_alone(case), case.verdict.summary()


def _diverges_under_dynamo_alone(case: Case) -> bool:
    """Does the case diverge compiled with the ``eager`` backend, which runs Dynamo's graph
    as it is: a divergence no fake backend planted?"""
    from fuzzer.execute.recipe import Recipe
    from fuzzer.execute.runner import run_task

    task = Task(graph=case.graph, draws=[case.inputs], recipe=Recipe(backend="eager"))
    return run_task(task).verdict.is_finding


# ---------------------------------------------------------------- the rules the strategies need


def test_float64_reference_promotes_integers_to_float64() -> None:
    """An int tensor times 0.5 is float32 in eager; the reference computes it in float64."""
    from fuzzer.execute.runner import Programs
    from fuzzer.judge import rules

    b = Builder(random.Random(0), "float32")
    n = b.input((4,), dtype="int64")
    b.graph.outputs = [b.op("mul_scalar", n, value=0.1), b.op("true_divide", n, n)]
    programs = Programs.build(b.graph)
    big = torch.tensor([2 ** 40 + 1, 3, -7, 16777217])
    eager = programs.model(big)
    ref = rules.float64_run(programs.model, [big])
    assert [t.dtype for t in eager] == [torch.float32] * 2
    assert [t.dtype for t in ref] == [torch.float64] * 2
    assert ref[0][3].item() == 16777217 * 0.1 and torch.get_default_dtype() == torch.float32


def test_layout_is_part_of_a_case_digest() -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((3, 4))
    b.graph.outputs = [b.op("exp", x)]
    value = torch.randn(3, 4)
    plain = Case(graph=b.graph, inputs={str(x): value})
    strided = Case(graph=b.graph, inputs={str(x): domains.lay_out(value, "transposed")})
    assert torch.equal(plain.inputs[str(x)], strided.inputs[str(x)])
    assert plain.digest() != strided.digest()
    # A size-1 dim may have any stride and still be contiguous: the digest reads its bytes.
    b = Builder(random.Random(0), "bfloat16")
    one = b.input((1,))
    b.graph.outputs = [b.op("exp", one)]
    odd = Case(graph=b.graph, inputs={str(one): torch.ones(2, dtype=torch.bfloat16)[::2]})
    assert odd.inputs[str(one)].stride() == (2,) and odd.inputs[str(one)].is_contiguous()
    assert odd.digest() == Case(graph=b.graph,
                                inputs={str(one): torch.ones(1, dtype=torch.bfloat16)}).digest()


def test_known_causes_match_every_spelling_of_an_op() -> None:
    from fuzzer.triage import known

    assert {known.bare(x) for x in ("torch.remainder", "operator.mod", "remainder_scalar",
                                    "Tensor.remainder")} == {"remainder"}
    assert known.bare("floordiv_scalar") == known.bare("torch.floor_divide") == "floordiv"
    fields = {"family": "nonfinite", "device": "cpu", "core": ["fmod_scalar"],
              "vanishes_with": []}
    assert known.match(fields).id == "vectorized-fmod-nan"
    fields = {"family": "flip", "device": "cpu", "core": ["abs", "neg"], "vanishes_with": []}
    assert known.match(fields).id == "uint8-abs-promotion"
    fields = {"family": "flip", "device": "cpu", "core": ["abs"], "vanishes_with": []}
    assert known.match(fields) is None


@pytest.mark.parametrize("attrs", [{"n": 1 << 40, "value": 3}, {"n": 10 ** 30, "value": 1}])
def test_a_case_file_cannot_make_a_factory_allocate_without_bound(attrs: dict) -> None:
    """x + arange(n) against an empty x is empty, yet eager would allocate n elements."""
    data = _vocabulary_graphs()["integer"].to_dict()
    node = next(n for n in data["nodes"] if n["op"] == "arange_mul")
    node["attrs"].update(attrs)
    with pytest.raises(ops.InvalidGraph):
        Graph.from_dict(data)
    b = Builder(random.Random(0), "float32")
    with pytest.raises(ops.InvalidGraph):
        b.op("arange_step", b.input((0, 1)), start=0.0, end=1e12, step=1e-3)


def test_a_float_step_reading_an_input_is_the_cause_core() -> None:
    """sign(x // 0.1): the floor division is the computation, so it names the cause (and the
    float-floor-division entry matches it); e8m0(x) has no computation but its own kernel."""
    from fuzzer.triage.signature import float_core

    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    step = b.op("sign_int8", b.op("floordiv_scalar", x, value=0.1))
    own = b.op("e8m0", x, eps=1e-12)
    b.graph.outputs = [step, own]
    case = Case(graph=b.graph, inputs={str(x): torch.ones(4)},
                verdict=Verdict("int-flip", output=0, node=step))
    assert float_core(case) == ["floordiv_scalar"]
    case.verdict = Verdict("int-flip", output=1, node=own)
    assert float_core(case) == []


def test_clamps_zero_tie_is_known_only_where_a_zero_sign_shows() -> None:
    """The two nights' forms of eager's clamp tie (#87131): ``clamp`` read by ``copysign`` or
    ``atan2`` is a hit; a flip whose core has a clamp but nothing that reads a zero's sign is
    not this cause and stays a finding."""
    from fuzzer.triage import known

    for core in (["clamp", "copysign"], ["clamp", "atan2"]):
        fields = {"family": "flip", "device": "cpu", "core": core, "vanishes_with": []}
        assert known.match(fields).id == "clamp-zero-tie-eager", core
    fields = {"family": "flip", "device": "cpu", "core": ["clamp", "exp"], "vanishes_with": []}
    found = known.match(fields)
    assert found is None or found.id != "clamp-zero-tie-eager"

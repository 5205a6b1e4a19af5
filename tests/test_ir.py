"""Graph IR, op registry, grammars and renderer: everything eager, no compiler involved."""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Callable

import pytest
import torch

from fuzzer.execute.runner import Programs
from fuzzer.gen import edge, grammar, inputs
from fuzzer.gen.grammar import Builder
from fuzzer.ir import ops, render
from fuzzer.ir.graph import Graph, op_chain
from fuzzer.judge import rules, semantics
from tests.conftest import skip_on_this_torch

DTYPES = ("float32", "bfloat16", "float16")

# ---------------------------------------------------------------- one small graph per registry op


def _x(b: Builder, shape: tuple[int, ...] = (2, 4, 6, 6)) -> int:
    return b.input(shape)


def _unary(name: str, **attrs: object) -> Callable[[Builder], int]:
    return lambda b: b.op(name, _x(b), **attrs)


def _binary(name: str) -> Callable[[Builder], int]:
    # Broadcasting a (4, 6) operand against (2, 3, 4, 6) exercises the broadcast shape rule.
    return lambda b: b.op(name, _x(b, (2, 3, 4, 6)), _x(b, (4, 6)))


def _int(b: Builder, shape: tuple[int, ...] = (3, 6)) -> int:
    return b.input(shape, dtype="int32")


def _int_binary(name: str) -> Callable[[Builder], int]:
    return lambda b: b.op(name, _int(b), b.input((6,), dtype="int64"))


def _index(b: Builder, shape: tuple[int, ...], bound: int) -> int:
    return b.input(shape, dtype="int64", role="index", bound=bound)


def _heads(b: Builder) -> tuple[int, int, int]:
    q, k, v = (b.op("split_heads", _x(b, (2, 8, 12)), heads=3) for _ in range(3))
    return q, k, v


def _batch_norm(b: Builder) -> int:
    params = [b.input((4,), role) for role in ("mean", "var", "gamma", "beta")]
    return b.op("batch_norm", _x(b), *params, eps=1e-5)


def _group_norm(b: Builder) -> int:
    return b.op("group_norm", _x(b), b.input((4,), "gamma"), b.input((4,), "beta"), groups=2,
                eps=1e-5)


def _rope(b: Builder) -> int:
    q, _, _ = _heads(b)
    return b.op("rope", q, b.input((8, 4), "cos"), b.input((8, 4), "sin"), half=2)


def _sdpa_masked(b: Builder) -> int:
    q, k, v = _heads(b)
    keep = b.input((2, 1, 1, 8), "keep", dtype="bool")
    return b.op("sdpa_masked", q, k, v, keep, scale=0.5)


def _scores(b: Builder) -> int:
    q, k, _ = _heads(b)
    return b.op("matmul", q, b.op("transpose", k, dim0=-2, dim1=-1))


def _generic_call(b: Builder) -> int:
    """A captured op outside the registry: the second chunk of a cumulative sum."""
    x = _x(b, (2, 4, 6))
    total = b.op("call", x, target="torch.cumsum", args=[{"in": 0}], kwargs={"dim": -1})
    return b.op("call", total, target="Tensor.chunk", args=[{"in": 0}, 2],
                kwargs={"dim": -1}, pick=1)


OP_BUILDERS: dict[str, Callable[[Builder], int]] = {
    **{name: _unary(name) for name in (
        "relu", "sigmoid", "tanh", "silu", "erf", "exp", "abs", "neg", "log2", "sqrt", "rsqrt",
        "floor", "ceil", "round", "trunc", "sign", "sign_int8", "flatten")},
    "gelu": _unary("gelu", approximate="tanh"),
    "call": _generic_call,
    "cast_roundtrip": _unary("cast_roundtrip", to="bfloat16"),
    "mul_scalar": _unary("mul_scalar", value=12345.678),
    "div_scalar": _unary("div_scalar", value=0.3),
    "add_scalar": _unary("add_scalar", value=-0.25),
    "floordiv_scalar": _unary("floordiv_scalar", value=0.1),
    "truncdiv_scalar": _unary("truncdiv_scalar", value=1.0 / 3.0),
    "clamp": _unary("clamp", lo=-0.5, hi=0.5),
    **{name: _binary(name) for name in (
        "add", "sub", "mul", "div", "maximum", "minimum", "floordiv", "gt")},
    **{name: _unary(name, dim=-1) for name in ("amax", "sum", "mean", "var", "softmax")},
    "log_softmax": _unary("log_softmax", dim=1),
    "layer_norm": lambda b: b.layer_norm(_x(b), (6, 6)),
    "rms_norm": lambda b: b.rms_norm(_x(b)),
    "batch_norm": _batch_norm,
    "group_norm": _group_norm,
    "conv2d": lambda b: b.conv(_x(b), 8, 3, stride=2),
    "linear": lambda b: b.linear(_x(b, (2, 5, 6)), 7),
    "avg_pool2d": _unary("avg_pool2d", kernel=2),
    "max_pool2d": _unary("max_pool2d", kernel=2),
    "adaptive_avg_pool2d": _unary("adaptive_avg_pool2d", size=2),
    "interpolate": _unary("interpolate", scale=2.0, mode="bilinear"),
    "avg_pool2d_ex": _unary("avg_pool2d_ex", kernel=3, stride=2, padding=1, ceil=True,
                            include_pad=False),
    "max_pool2d_ex": _unary("max_pool2d_ex", kernel=2, stride=1, padding=1, dilation=2,
                            ceil=True),
    "adaptive_max_pool2d": _unary("adaptive_max_pool2d", size=3),
    "avg_pool1d": lambda b: b.op("avg_pool1d", _x(b, (2, 3, 9)), kernel=3, stride=2, padding=1,
                                 ceil=True),
    "interpolate_size": _unary("interpolate_size", size=(7, 3), mode="bicubic", align=True),
    "matmul": lambda b: b.op("matmul", _x(b, (2, 3, 4, 5)), _x(b, (5, 6))),
    "transpose": _unary("transpose", dim0=1, dim1=-1),
    "split_heads": lambda b: b.op("split_heads", _x(b, (2, 8, 12)), heads=4),
    "merge_heads": lambda b: b.op("merge_heads", _heads(b)[0]),
    "causal_mask": lambda b: b.op("causal_mask", _scores(b)),
    "padding_mask": lambda b: b.op("padding_mask", _scores(b),
                                   b.input((2, 1, 1, 8), "mask", dtype="bool")),
    "sdpa": lambda b: b.op("sdpa", *_heads(b), causal=True, scale=None),
    "sdpa_masked": _sdpa_masked,
    "rope": _rope,
    "e8m0": _unary("e8m0", eps=2.0 ** -126),
    "quant_int8": _unary("quant_int8", scale=0.05, zero_point=0),
    "quant_uint8": _unary("quant_uint8", scale=1.0 / 16, zero_point=128),
    "gt_scalar": _unary("gt_scalar", value=0.5),
    "to_int32": _unary("to_int32"),
    "input": lambda b: _x(b),
    # The edge vocabulary (gen.edge): special functions, integers, reductions, layouts.
    **{name: _unary(name) for name in ops.tagged("special") if not ops.spec(name).attrs},
    **{name: _binary(name) for name in (
        "atan2", "hypot", "xlogy", "copysign", "fmax", "fmin", "logaddexp", "pow", "remainder",
        "fmod", "truncdiv", "true_divide", "lt", "le", "eq", "ne")},
    **{name: _int_binary(name) for name in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    "pow_scalar": _unary("pow_scalar", value=-0.5),
    "round_decimals": _unary("round_decimals", decimals=1),
    "ldexp_scalar": _unary("ldexp_scalar", value=3),
    "frexp": _unary("frexp", pick=1),
    "remainder_scalar": _unary("remainder_scalar", value=0.3),
    "fmod_scalar": _unary("fmod_scalar", value=-0.7),
    "lt_scalar": _unary("lt_scalar", value=0.5),
    "bitwise_not": lambda b: b.op("bitwise_not", _int(b)),
    "shl_scalar": lambda b: b.op("shl_scalar", _int(b), value=3),
    "shr_scalar": lambda b: b.op("shr_scalar", _int(b), value=2),
    "cast": _unary("cast", to="int8"),
    "own_dtype": _unary("own_dtype"),
    "where": lambda b: b.op("where", b.input((6,), "mask", dtype="bool"), _x(b), _x(b, (6,))),
    "masked_fill": lambda b: b.op("masked_fill", _x(b), b.input((6,), "mask", dtype="bool"),
                                  value=-1.5),
    **{name: _unary(name, dims=(1, 2), keepdim=False) for name in (
        "amin", "amax_dims", "sum_dims", "mean_dims", "logsumexp")},
    "norm": _unary("norm", dims=(1, 2), keepdim=True, p=2.0),
    "var_c": _unary("var_c", dims=(1,), keepdim=False, correction=1),
    "std_c": _unary("std_c", dims=(0, 3), keepdim=True, correction=2),
    "var_mean": _unary("var_mean", dims=(1,), keepdim=False, correction=0, pick=1),
    "std_mean": _unary("std_mean", dims=(2,), keepdim=True, correction=1, pick=0),
    **{name: _unary(name, dim=1, keepdim=True) for name in ("prod", "any", "all")},
    **{name: _unary(name, dim=-1) for name in ("cumsum", "cumprod")},
    "gather": lambda b: b.op("gather", _x(b), _index(b, (2, 4, 6, 3), 6), dim=3),
    "index_select": lambda b: b.op("index_select", _x(b), _index(b, (3,), 4), dim=1),
    "embedding": lambda b: b.op("embedding", b.input((10, 6)), _index(b, (2, 5), 10)),
    "arange_mul": lambda b: b.op("arange_mul", _int(b), n=6, value=2 ** 31 + 11),
    "arange_step": _unary("arange_step", start=0.0, end=0.55, step=0.1),
    "linspace_mul": _unary("linspace_mul", lo=-1.0, hi=2.0, n=6),
    "full_like": _unary("full_like", value=0.1),
    "permute": _unary("permute", dims=(3, 2, 1, 0)),
    "expand": lambda b: b.op("expand", b.input((1, 6)), size=(4, 6)),
    "flip": _unary("flip", dims=(1,)),
    "slice_step": _unary("slice_step", step=2),
    "narrow": _unary("narrow", dim=1, start=1, length=2),
    "chunk": _unary("chunk", chunks=2, dim=1, pick=1),
    # An old alias read again after a write to its storage (``x.t()`` read after ``x.exp_()``).
    "reread": lambda b: b.op("reread", b.op("t", _x(b, (4, 6))), b.op("exp_", 0)),
    "contiguous": _unary("contiguous"),
    "clone": _unary("clone"),
    "unsqueeze": _unary("unsqueeze", dim=0),
    "cat": lambda b: b.op("cat", _x(b), _x(b, (2, 1, 6, 6)), dim=1),
}


def _from_example(name: str):
    """A builder for an entry that carries its own example (``OpSpec.example``)."""
    inputs, attrs = ops.spec(name).example

    def build(b: Builder) -> int:
        ids = [b.input(tuple(i["shape"]), i.get("role", "x"), dtype=i.get("dtype"),
                       **{k: v for k, v in i.items() if k not in ("shape", "role", "dtype")})
               for i in inputs]
        return b.op(name, *ids, **attrs)

    return build


OP_BUILDERS.update({name: _from_example(name) for name, s in ops.REGISTRY.items()
                    if s.example and name not in OP_BUILDERS})


def build_single(name: str, dtype: str) -> Graph:
    b = Builder(random.Random(0), dtype)
    b.graph.outputs = [OP_BUILDERS[name](b)]
    b.graph.remove_dead()
    return b.graph


def run_eager(graph: Graph, seed: int = 0) -> tuple[list[torch.Tensor], dict[int, torch.Tensor]]:
    """Render, load and run the model (and its float64 trace twin) on one seeded draw."""
    programs = Programs.build(graph)
    _, draw = inputs.draws(graph, seed, 1)[0]
    args = inputs.ordered(graph, draw)
    outs = list(programs.model(*args))
    values = rules.float64_run(programs.trace, args)
    own = programs.trace(*args)
    for found, out_id in zip(semantics.heads(graph, values, own), graph.outputs):
        if found is not None:  # discrete head: one boundary distance per output element
            assert found.ulps.shape == found.strong.shape == tuple(graph.node(out_id).shape)
            assert not torch.isnan(found.ulps).any()
    return outs, values


def assert_matches_ir(graph: Graph, outs: list[torch.Tensor]) -> None:
    assert len(outs) == len(graph.outputs)
    for out, node_id in zip(outs, graph.outputs):
        node = graph.node(node_id)
        assert tuple(out.shape) == tuple(node.shape), (node.op, out.shape, node.shape)
        assert str(out.dtype).removeprefix("torch.") == node.dtype, node.op


def test_op_table_covers_the_registry() -> None:
    assert set(OP_BUILDERS) == set(ops.REGISTRY)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(ops.REGISTRY))
def test_every_op_renders_and_runs_eager(name: str, dtype: str) -> None:
    if name in ops.tagged("special") and not edge.has_kernel(name, dtype):
        skip_on_this_torch(f"eager has no {dtype} kernel for {name} (the grammar never draws it)")
    graph = build_single(name, dtype)
    if name != "input":
        assert name in [graph.node(n).op for n in graph.op_ids()]
        assert ops.REGISTRY[name].render(
            [graph.var(i) for i in graph.node(graph.outputs[0]).inputs],
            graph.node(graph.outputs[0]).attrs) in render.render_model(graph)
    outs, values = run_eager(graph)
    assert_matches_ir(graph, outs)
    if not semantics.float64_stands(graph):
        return  # a dtype view: float64's bits are other bits (judged by eager parity)
    # The float64 twin computes the same shapes, in float64 wherever the model computes floats.
    for node_id in graph.order():
        value = values[node_id]
        assert tuple(value.shape) == tuple(graph.node(node_id).shape)
        if graph.node(node_id).dtype in ops.FLOAT_DTYPES:
            assert value.dtype == torch.float64


# ---------------------------------------------------------------- serialization


def _sample_graph() -> Graph:
    return grammar.generate(11, "attention", "bfloat16")


def test_round_trip_is_exact_and_plain() -> None:
    graph = _sample_graph()
    data = graph.to_dict()
    # Plain data only: survives JSON, so case files never need pickled classes.
    again = json.loads(json.dumps(data))
    back = Graph.from_dict(again)
    assert back.to_dict() == data
    assert render.render_model(back) == render.render_model(graph)
    assert back.digest() == graph.digest()
    assert op_chain(back) == op_chain(graph)


def _relabelled(data: dict, mapping: dict[int, int]) -> dict:
    out = copy.deepcopy(data)
    for node in out["nodes"]:
        node["id"] = mapping[node["id"]]
        node["inputs"] = [mapping[i] for i in node["inputs"]]
    out["outputs"] = [mapping[o] for o in out["outputs"]]
    return out


def test_digest_is_stable_under_relabelling_and_sensitive_to_content() -> None:
    graph = _sample_graph()
    data = graph.to_dict()
    ids = [n["id"] for n in data["nodes"]]
    # New ids, same relative order (what copy/relabel/minimizer edits produce).
    moved = Graph.from_dict(_relabelled(data, {i: 1000 + 7 * i for i in ids}))
    assert moved.input_ids() != graph.input_ids()
    assert moved.digest() == graph.digest()

    relabelled = graph.copy()
    relabelled.relabel()
    assert relabelled.digest() == graph.digest()
    assert relabelled.order() == list(range(len(ids)))

    changed = copy.deepcopy(data)  # the same wiring, one constant differs
    target = next(n for n in changed["nodes"] if n["op"] in ("rms_norm", "layer_norm"))
    target["attrs"]["eps"] = target["attrs"]["eps"] * 2
    assert Graph.from_dict(changed).digest() != graph.digest()


def test_digest_is_stable_under_arbitrary_renumbering() -> None:
    graph = _sample_graph()
    data = graph.to_dict()
    ids = [n["id"] for n in data["nodes"]]
    shuffled = random.Random(3).sample(range(1000, 1000 + 5 * len(ids)), len(ids))
    assert Graph.from_dict(_relabelled(data, dict(zip(ids, shuffled)))).digest() == graph.digest()


def test_float_literals_are_exact() -> None:
    for value in (0.1, 1.0 / 3.0, 12345.678, 2.0 ** -126, 5e-324, -0.0, 1e308):
        back = eval(ops.literal(value))
        assert back == value and math.copysign(1, back) == math.copysign(1, value)
    assert eval(ops.literal(float("inf"))) == math.inf
    assert math.isnan(eval(ops.literal(float("nan"))))
    assert eval(ops.literal((3,))) == (3,)


# ---------------------------------------------------------------- random graphs per grammar

GRAPHS_PER_CELL = 8


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("which", grammar.GRAMMARS)
def test_random_graphs_are_valid_and_run_eager(which: str, dtype: str) -> None:
    digests = set()
    for seed in range(GRAPHS_PER_CELL):
        graph = grammar.generate(seed, which, dtype)
        assert graph.outputs and len(graph) > 0
        # Deterministic in the seed, and every node survives re-checking from its plain dict.
        assert grammar.generate(seed, which, dtype).to_dict() == graph.to_dict()
        assert Graph.from_dict(json.loads(json.dumps(graph.to_dict()))).to_dict() == \
            graph.to_dict()
        assert set(graph.op_names()) <= set(ops.REGISTRY)
        assert "argmax" not in graph.op_names() and "argmin" not in graph.op_names()
        names = set(graph.op_names())
        if which == "vision":
            assert "conv2d" in names
        elif which == "attention":
            assert "linear" in names and "split_heads" in names
        for node_id in graph.input_ids():
            assert graph.node(node_id).dtype in (dtype, "bool")
        for out in graph.outputs:
            assert graph.node(out).dtype in (dtype, *ops.DISCRETE_DTYPES)
        outs, _ = run_eager(graph, seed)
        assert_matches_ir(graph, outs)
        digests.add(graph.digest())
    assert len(digests) == GRAPHS_PER_CELL  # the seeds give different programs


def test_mixed_grammar_draws_both_bodies_and_discrete_heads() -> None:
    graphs = [grammar.generate(seed, "mixed") for seed in range(40)]
    names = set().union(*(g.op_names() for g in graphs))
    assert {"conv2d", "linear"} <= names
    heads = {op for op in names if ops.REGISTRY[op].boundary is not None}
    assert len(heads) >= 4


def test_input_draws_are_reproducible_and_cover_magnitudes() -> None:
    graph = grammar.generate(5, "vision", "float16")
    first, second = inputs.draws(graph, 5, 4), inputs.draws(graph, 5, 4)
    assert [m for m, _ in first] == [m for m, _ in second]
    assert set(m for m, _ in first) == set(inputs.MAGNITUDES)
    for (_, a), (_, b) in zip(first, second):
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a)
    # Weights are shared across draws; activations are not.
    x = str(next(n for n in graph.input_ids() if graph.node(n).attrs["role"] == "x"))
    w = str(next(n for n in graph.input_ids() if graph.node(n).attrs["role"] == "w"))
    assert torch.equal(first[0][1][w], first[1][1][w])
    assert not torch.equal(first[0][1][x], first[1][1][x])
    # Inputs are finite in the working dtype, even the "large" class.
    for _, draw in first:
        assert all(torch.isfinite(t).all() for t in draw.values() if t.is_floating_point())


# ---------------------------------------------------------------- malformed graphs


def _good() -> dict:
    return build_single("conv2d", "float32").to_dict()


def _mutated(change: Callable[[dict], object]) -> dict:
    data = _good()
    change(data)
    return data


def _node(data: dict, op: str) -> dict:
    return next(n for n in data["nodes"] if n["op"] == op)


def _mutated_op(op: str, change: Callable[[dict], object]) -> dict:
    data = build_single(op, "float32").to_dict()
    change(_node(data, op))
    return data


MALFORMED: dict[str, object] = {
    "not a dict": ["nodes"],
    "wrong version": _mutated(lambda d: d.update(ir_version=99)),
    "no version": _mutated(lambda d: d.pop("ir_version")),
    "no nodes": _mutated(lambda d: d.pop("nodes")),
    "nodes not a list": _mutated(lambda d: d.update(nodes=7)),
    "no outputs": _mutated(lambda d: d.update(outputs=[])),
    "output not a node": _mutated(lambda d: d.update(outputs=[999])),
    "unknown op": _mutated(lambda d: _node(d, "conv2d").update(op="os_system")),
    "reads missing node": _mutated(lambda d: _node(d, "conv2d")["inputs"].__setitem__(0, 555)),
    "reads itself": _mutated(lambda d: _node(d, "conv2d")["inputs"].__setitem__(
        0, _node(d, "conv2d")["id"])),
    "duplicate id (cycle)": _mutated(lambda d: d["nodes"].append(
        {**_node(d, "conv2d"), "op": "relu", "inputs": [_node(d, "conv2d")["id"]]})),
    "wrong arity": _mutated(lambda d: _node(d, "conv2d")["inputs"].pop()),
    "channel mismatch": _mutated(lambda d: d["nodes"][0].update(shape=[2, 5, 6, 6])),
    "shape not ints": _mutated(lambda d: d["nodes"][0].update(shape=["a", 2])),
    "unknown input dtype": _mutated(lambda d: d["nodes"][0].update(dtype="complex_evil")),
    "attrs not a mapping": _mutated(lambda d: _node(d, "conv2d").update(attrs=5)),
    "missing attribute key": _mutated(lambda d: _node(d, "conv2d")["attrs"].pop("groups")),
    "node without op": _mutated(lambda d: _node(d, "conv2d").pop("op")),
    "attribute of the wrong type": _mutated(lambda d: _node(d, "conv2d")["attrs"].update(
        stride="2")),
    "zero groups": _mutated(lambda d: _node(d, "conv2d")["attrs"].update(groups=0)),
}
MALFORMED |= {
    "zero heads": _mutated_op("split_heads", lambda n: n["attrs"].update(heads=0)),
    "norm attribute missing": _mutated_op("group_norm", lambda n: n["attrs"].pop("groups")),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_graph_dicts_raise_invalid_graph(case: str) -> None:
    with pytest.raises(ops.InvalidGraph):
        Graph.from_dict(MALFORMED[case])


def test_good_graph_dict_is_accepted() -> None:
    # The malformed variants above all start from this one, which must itself be fine.
    assert Graph.from_dict(_good()).op_names() == ["conv2d"]


def test_spliced_identifiers_cannot_inject_code() -> None:
    data = build_single("cast_roundtrip", "float32").to_dict()
    _node(data, "cast_roundtrip")["attrs"]["to"] = "float16).to(__import__('os').system('x')"
    with pytest.raises(ops.InvalidGraph):
        render.render_model(Graph.from_dict(data))
    # String attributes that are not spliced are rendered as literals, never as code.
    data = build_single("interpolate", "float32").to_dict()
    _node(data, "interpolate")["attrs"]["mode"] = "x'); import os; ('"
    source = render.render_model(Graph.from_dict(data))
    assert "mode=\"x'); import os; ('\"" in source


def test_shape_rules_reject_bad_builds() -> None:
    b = Builder(random.Random(0), "float32")
    with pytest.raises(ops.InvalidGraph):
        b.op("add", b.input((2, 3)), b.input((4, 3)))
    with pytest.raises(ops.InvalidGraph):
        b.op("split_heads", b.input((2, 8, 10)), heads=3)
    with pytest.raises(ops.InvalidGraph):
        b.op("relu", b.input((2,), dtype="int32"))
    with pytest.raises(ops.InvalidGraph):
        grammar.generate(0, "no-such-grammar")

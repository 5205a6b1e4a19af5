"""What an op entry is (``OpSpec``), the one table of them (``REGISTRY``), and the questions
every stage asks it: ``spec``, ``infer``, ``accepts``, ``evaluate``, ``capturing``, ``tagged``.

An entry holds everything numfuzz knows about its op, in the NNSmith style: arity, shape and
dtype rules (or torch's own, ``meta``), the source template the renderer emits, the input domain
(``edges``), a discrete head's discontinuity (``boundary``) or a float step's (``step``), whether
its result is exact given exact inputs (``exact``: no rounding noise of its own), what it aliases
and mutates (``alias``, ``mutates``: views and in-place writes), which torch calls of a captured
model it renders bit for bit (``captures``, ``lift``), and where the generators may draw it
(``tags``), and whether its output is indices judged by what they select (``selects``). The
family modules (``pointwise``, ``reductions``, ``nn``, ``layout``, ``heads``, ``state``,
``selection``, ``indexing``, ``vocabulary``) register the entries; nothing outside this package
keeps a list of op names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

import torch

from fuzzer.ir.ops.base import (
    MAX_NUMEL,
    Boundary,
    InvalidGraph,
    Shape,
    literal,
    probe,
    torch_dtype,
)
from fuzzer.ir.ops.shapes import float_in_same_out, same_shape


@dataclass(frozen=True)
class Selects:
    """An output of int64 indices into the op's first input (argmax, sort's and topk's indices,
    max_pool2d's): judged by the values they select, never as raw indices (``judge.semantics``).

    ``select`` maps (first input, indices, attrs) to (the values the indices select, shaped as
    the indices; whether each index is in range), in plain torch so a repro can carry it.
    ``pick``: which element of the op's tuple holds the indices (attr ``pick``); None when the op
    returns them alone. ``ordered_by``: the attr that, when true, defines the order of equal
    values (a stable sort): there a different index among equal values is wrong too.
    ``first``: torch documents the first index among equal values (argmax, ``max(x, dim)``);
    ``picks``: what a right index selects, in a title's words (``the minimum``).
    """

    select: Callable[[torch.Tensor, torch.Tensor, dict], tuple[torch.Tensor, torch.Tensor]]
    pick: int | None = None
    ordered_by: str | None = None
    first: bool = False
    picks: str = "the value float64's index selects"


@dataclass(frozen=True)
class OpSpec:
    """One op: how many tensor inputs, how shapes and dtypes flow, the source it renders to, and
    what the rest of numfuzz needs to know about it (see the module docstring).

    ``template`` is a str.format pattern: ``{0}``, ``{1}`` … are the input variables, ``{name}`` an
    attribute rendered as an exact Python literal. ``boundary`` marks a discrete head; ``step`` a
    float op whose output jumps (floor, ceil, round, sign): a head fed by one flips where the
    step's own input crosses these points, so the oracle measures there. ``infer`` (``meta=True``
    at registration: ``by_meta``) lets torch itself decide shape and dtype (promotion of integers,
    bools, 0-d tensors and Python scalars), so the IR's dtype is the one eager produces.
    """

    name: str
    arity: int
    template: str
    shape_rule: Callable[[list[Shape], dict], Shape] = same_shape
    dtype_rule: Callable[[list[str], dict], str] = float_in_same_out
    category: str = "elementwise"
    boundary: Boundary | None = None
    step: Boundary | None = None
    attrs: tuple[str, ...] = field(default=())
    raw: tuple[str, ...] = field(default=())  # attrs spliced in as identifiers (dtype names)
    # For ops no template or shape rule can describe (generic calls): arity -1 means any.
    renderer: Callable[[list[str], dict], str] | None = None
    infer: Callable[[list[Shape], list[str], dict], tuple[Shape, str]] | None = None
    # The op's input domain: where its first input is interesting (poles, branch points, where it
    # overflows or saturates), as a function of the working dtype's finfo. The ``edges`` input
    # domain (gen.domains) draws there.
    edges: Callable[[torch.finfo], tuple[float, ...]] | None = None
    # The torch calls a captured model makes that this op renders exactly (generic target names:
    # ``torch.erf``, ``Tensor.transpose``, ``operator.add``), and how such a call's plain-data
    # arguments become this op's attrs (``lift``: None when the call's form is not one it
    # renders bit for bit; default ``lift_exact``). ``user.lift`` reads both.
    captures: tuple[str, ...] = field(default=())
    lift: Callable[[list, dict], dict | None] | None = None
    # No rounding of its own: its result is exact given exact inputs (a layout change, a
    # selection, abs, a float step). The evidence rule nudges every other float node by an ulp
    # to see whether a code is chaotic (``judge.rules``); an exact node adds no noise.
    exact: bool = False
    # Where the generators may draw it: ``special`` (a special-functions step), ``binary-float``
    # (a binary float op of that strategy), ``swappable`` (mutation swaps one for another),
    # ``combine`` (mutation joins two values with it).
    tags: frozenset[str] = frozenset()
    # A float-to-integer conversion without a clamp: out of range (and NaN, inf) it is undefined.
    unclamped: bool = False
    # The values a generator may draw for an attribute when it places the op anew (a mutation
    # swapping one elementwise op for another).
    choices: dict[str, tuple] = field(default_factory=dict)
    # State: the input whose storage the result shares (a view, or an in-place op's target), and
    # the inputs it writes in place. ``ir.graph`` derives versions and statement order from them.
    # A ``statement`` (``x[i] = v``, ``x.add_(v)``) renders as itself, with no name of its own:
    # the node is its target (input ``alias``) after the write.
    alias: int | None = None
    mutates: tuple[int, ...] = ()
    statement: bool = False
    # Its first input is an alias to read again after its second input's write (``reread``),
    # not a value read as it was: the one read of an older version the IR allows.
    renews: bool = False
    # Defines the sign of a zero it gives (IEEE and eager agree: ``minimum``, ``neg``,
    # ``copysign``, sums, products, views): a zero of the other sign compiled is a finding
    # (``judge.rules.zero_sign_regressions``). False where either zero may come out (a maximum
    # among equal values, a reduction's order or identity) or where it is not known.
    signs_zero: bool = False
    # Where the sign of a zero it makes is not defined after all, per element, from its inputs'
    # float64 values, whether each is a graph input (copied as it is) and its own float64
    # result: ``copysign`` of a NaN that arithmetic made (IEEE leaves that NaN's sign
    # unspecified), a ``maximum`` of -0.0 and +0.0 where eager's zero is not IEEE's (eager's
    # scalar and vector paths pick different zeros). ``judge.semantics`` reads it.
    unsigned: Callable[[list[torch.Tensor], list[bool], torch.Tensor, dict], torch.Tensor] | None \
        = None
    # Reinterprets bits (``x.view(torch.int32)``): float64 cannot stand for what follows, so a
    # program holding one is judged against eager (``judge.semantics.float64_stands``).
    bits: bool = False
    # A small valid use, as plain data: (inputs, attrs), each input a dict of its ``shape``,
    # ``dtype`` (absent: the working dtype), ``role`` and other input attrs. Every entry with one
    # is built, rendered and run by the suite on every float dtype.
    example: tuple = ()
    # Its output (or its tuple's element ``selects.pick``) holds indices into its first input:
    # judged by what they select (``Selects``, ``judge.semantics.selections``), so equal values
    # picked by different indices are no divergence and a worse pick is one.
    selects: Selects | None = None
    # numerics="strict" promises eager's bits for it (torch 2.15, Triton): pointwise arithmetic
    # and casts (eager's casts and IEEE division implied), a sum over one dim in eager's order.
    # A program of such ops and views only is held to eager exactly on that surface.
    strict: bool = False

    def render(self, args: list[str], attrs: dict) -> str:
        if self.arity >= 0 and len(args) != self.arity:
            raise InvalidGraph(f"{self.name} takes {self.arity} inputs, got {len(args)}")
        if self.renderer is not None:
            return self.renderer(args, attrs)
        values = {}
        for key, value in attrs.items():
            if key in self.raw:
                if not (isinstance(value, str) and value.isidentifier()):
                    raise InvalidGraph(f"{self.name}.{key} must be a name, got {value!r}")
                values[key] = value
            else:
                values[key] = literal(value)
        try:
            return self.template.format(*args, **values)
        except (KeyError, IndexError) as err:
            raise InvalidGraph(f"{self.name} is missing attribute {err}") from None

    @property
    def torch_call(self) -> str | None:
        """The torch function its source calls (``torch.expm1``, ``F.conv2d``), None for a
        method (``x.index_add_``) or an indexing: how a title names it."""
        found = CALL.match(self.template)
        return found.group(1) if found else None

    @property
    def torch_name(self) -> str | None:
        """The torch function it stands for as upstream's issues name it: its source's first
        call (``floordiv_scalar`` is ``div``), else its method (``index_add_``); None for an
        indexing, which has no name."""
        found = NAMED.search(self.template) or METHOD.search(self.template)
        if found:
            return found.group(1)
        operator = OPERATOR.fullmatch(self.template)
        return OPERATORS[operator.group(1)] if operator else None

    @property
    def elementwise(self) -> bool:
        """Each output element reads only the same element of each input (the slicing pass)."""
        return self.category in ("elementwise", "binary", "head")


REGISTRY: dict[str, OpSpec] = {}
# How a template calls torch: a function at its start (``torch.expm1({0})``), a function
# anywhere (``torch.div({0}, {divisor}, rounding_mode='floor')``), or a method (``{0}.abs_()``).
CALL = re.compile(r"((?:torch|F)\.[\w.]+)\(")
NAMED = re.compile(r"(?:torch|F|special)\.(\w+)\(")
METHOD = re.compile(r"\.(\w+)\(")
# ``{0} > {value}``: a Python operator, named as torch names its function.
OPERATOR = re.compile(r"\{0\} (\S+) \{\w+\}")
OPERATORS = {"+": "add", "-": "sub", "*": "mul", "/": "div", ">": "gt", "<": "lt", ">=": "ge",
             "<=": "le", "==": "eq", "!=": "ne", "&": "bitwise_and", "|": "bitwise_or",
             "^": "bitwise_xor", "<<": "bitwise_left_shift", ">>": "bitwise_right_shift"}


class Preset(TypedDict, total=False):
    """Keyword arguments a family of entries shares (``register(..., **VIEW)``): typed, so that
    ``meta`` and ``tags``, which ``register`` takes by name, are seen to get what they take."""

    category: str
    exact: bool
    alias: int
    signs_zero: bool
    meta: bool
    tags: tuple[str, ...]


# (its inputs' float64 values, which are graph inputs, its float64 result, its attrs) -> where
Unsigned = Callable[[list[torch.Tensor], list[bool], torch.Tensor, dict], torch.Tensor]


def nan_sign_of(position: int) -> Unsigned:
    """``OpSpec.unsigned`` of an op copying input ``position``'s sign: undefined where that
    input is a NaN arithmetic made (a graph input's NaN keeps the sign it was given)."""
    def unsigned(values: list[torch.Tensor], given: list[bool], result: torch.Tensor,
                 attrs: dict) -> torch.Tensor:
        nan = torch.isnan(values[position])
        return torch.zeros_like(nan) if given[position] else nan
    return unsigned


def zero_tie(negative: bool) -> Unsigned:
    """``OpSpec.unsigned`` of a minimum (IEEE: ``-0.0`` wins a tie of zeros, ``negative``) or a
    maximum (``+0.0`` wins): undefined where eager's zero at such a tie is not IEEE's (eager's
    scalar and vector paths differ there, and upstream makes compiled follow IEEE)."""
    def unsigned(values: list[torch.Tensor], given: list[bool], result: torch.Tensor,
                 attrs: dict) -> torch.Tensor:
        a, b = values[0], values[1]
        tie = (a == 0) & (b == 0) & (torch.signbit(a) != torch.signbit(b))
        return tie & (torch.signbit(result) != negative)
    return unsigned


def clamp_zero_tie(values: list[torch.Tensor], given: list[bool], result: torch.Tensor,
                   attrs: dict) -> torch.Tensor:
    """``OpSpec.unsigned`` of ``clamp``: where its input is a zero and a bound a zero of the
    other sign, eager returns the input (a tie is neither below nor above the bound) and clamp's
    formula ``min(max(x, lo), hi)`` the bound's IEEE pick: either zero may come out (eager issue
    #87131). Anywhere else eager and the formula agree on the zero's sign."""
    x = values[0]
    undefined = torch.zeros(x.shape, dtype=torch.bool)
    for bound in (attrs.get("lo"), attrs.get("hi")):
        if isinstance(bound, (int, float)) and not isinstance(bound, bool) and bound == 0:
            negative = math.copysign(1.0, bound) < 0
            undefined |= (x == 0) & (torch.signbit(x) != negative)
    return undefined


def register(name: str, arity: int, template: str, *, meta: bool = False,
             tags: tuple[str, ...] = (), **kw: Any) -> OpSpec:
    """Add an entry; ``meta``: torch decides its shape and dtype (``by_meta``)."""
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is registered twice")
    if meta:
        kw["infer"] = by_meta(name)
    entry = OpSpec(name, arity, template, tags=frozenset(tags), **kw)
    REGISTRY[name] = entry
    return entry


def unary(name: str, template: str, **kw: Any) -> OpSpec:
    return register(name, 1, template, **kw)


def binary(name: str, template: str, **kw: Any) -> OpSpec:
    return register(name, 2, template, category=kw.pop("category", "binary"), **kw)


def _check_sizes(name: str, attrs: dict) -> None:
    """A factory's length comes from its attributes: bound it before anything runs (the output
    alone does not tell, ``x + arange(n)`` broadcast against an empty ``x`` is empty)."""
    lengths = [attrs.get(key) for key in ("n", "length")]
    if {"start", "end", "step"} <= set(attrs):
        try:
            lengths.append(math.ceil((attrs["end"] - attrs["start"]) / attrs["step"]))
        except (TypeError, ZeroDivisionError, ValueError, OverflowError):
            raise InvalidGraph(f"{name}: arange bounds {attrs!r} are not numbers") from None
    size = attrs.get("size", ())
    lengths += list(size) if isinstance(size, (list, tuple)) else [size]
    for length in lengths:
        if isinstance(length, (int, float)) and not abs(length) <= MAX_NUMEL:
            raise InvalidGraph(f"{name}: a length of {length} is more than numfuzz runs")


def evaluate(name: str, tensors: list[torch.Tensor], attrs: dict) -> Any:
    """Op ``name`` run on ``tensors``: its registry template with literal attributes, the same
    text the renderer emits and the runner executes."""
    names = [f"_in{i}" for i in range(len(tensors))]
    scope: dict[str, object] = {"torch": torch, "F": torch.nn.functional,
                                **dict(zip(names, tensors))}
    return eval(REGISTRY[name].render(names, attrs), scope)  # noqa: S307 - registry text


def by_meta(name: str) -> Callable[[list[Shape], list[str], dict], tuple[Shape, str]]:
    """Shape and dtype as torch computes them: the op's own source (``evaluate``) on meta
    tensors, so nothing is allocated."""

    def infer(shapes: list[Shape], dtypes: list[str], attrs: dict) -> tuple[Shape, str]:
        _check_sizes(name, attrs)
        names = [f"_in{i}" for i in range(len(shapes))]
        key = (name, tuple(map(tuple, shapes)), tuple(dtypes), REGISTRY[name].render(names, attrs))
        answer = _META_ANSWERS.get(key)
        if answer is None:
            answer = _META_ANSWERS[key] = _run_on_meta(name, shapes, dtypes, attrs)
        if isinstance(answer, str):
            raise InvalidGraph(answer)
        return answer

    return infer


# by_meta's answers (a shape and dtype, or why torch refused) by op, argument shapes and dtypes,
# and the exact text run: a generator asks the same question many times, and some meta kernels
# are Python decompositions (bicubic upsampling: ~0.1 s a call) that dominated generation.
_META_ANSWERS: dict[tuple, tuple[Shape, str] | str] = {}


def _run_on_meta(name: str, shapes: list[Shape], dtypes: list[str],
                 attrs: dict) -> tuple[Shape, str] | str:
    tensors = [torch.empty(s, dtype=torch_dtype(d), device="meta") for s, d in zip(shapes, dtypes)]
    try:
        with probe():
            out = evaluate(name, tensors, attrs)
    except InvalidGraph as err:
        return str(err)
    except Exception as err:  # torch rejects these shapes or dtypes: an invalid graph
        first = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
        return f"{name}: {type(err).__name__}: {first}"
    if not isinstance(out, torch.Tensor):
        return f"{name} does not return one tensor"
    if out.numel() > MAX_NUMEL:
        return f"{name} makes {out.numel()} elements, more than numfuzz runs"
    if len(_META_ANSWERS) > 50_000:  # a bound for a night-long worker
        _META_ANSWERS.clear()
    return tuple(out.shape), str(out.dtype).removeprefix("torch.")


# ---------------------------------------------------------------- what a captured call is
# A captured model's calls arrive as generic ``call`` nodes (``fuzzer.ir.generic``): a target name
# and plain-data arguments, a tensor input written ``{"in": k}``. Where a registry op renders the
# very same computation, capture lifts the call to it (``user.lift``), so the oracle knows its
# boundary and the minimizer its category. Each lift returns the op's attrs, or None when the
# call's form differs from what the op renders.

TENSOR = {"in": 0}


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def lift_exact(arity: int) -> Callable[[list, dict], dict | None]:
    """``f(t0, t1, …)``: the tensors in order, nothing else."""
    def lift(args: list, kwargs: dict) -> dict | None:
        return {} if args == [{"in": i} for i in range(arity)] and not kwargs else None

    return lift


def lift_not_inplace(args: list, kwargs: dict) -> dict | None:
    """``F.relu(x)`` / ``F.silu(x, inplace=False)``."""
    return {} if args == [TENSOR] and set(kwargs) <= {"inplace"} \
        and not kwargs.get("inplace") else None


def lift_gelu(args: list, kwargs: dict) -> dict | None:
    if args != [TENSOR] or not set(kwargs) <= {"approximate"}:
        return None
    return {"approximate": kwargs.get("approximate", "none")}


def lift_scalar(commutative: bool, as_float: bool = False) -> Callable[[list, dict],
                                                                         dict | None]:
    """``x * 2.0`` (and ``2.0 * x`` where that is the same bits): the scalar is ``value``."""
    def lift(args: list, kwargs: dict) -> dict | None:
        if len(args) != 2 or kwargs:
            return None
        a, b = args
        if a == TENSOR and _number(b):
            return {"value": float(b) if as_float else b}
        if commutative and b == TENSOR and _number(a):
            return {"value": float(a) if as_float else a}
        return None

    return lift


def lift_clamp(args: list, kwargs: dict) -> dict | None:
    if len(args) == 3 and args[0] == TENSOR and not kwargs and _number(args[1]) \
            and _number(args[2]):
        return {"lo": args[1], "hi": args[2]}
    return None


def lift_transpose(args: list, kwargs: dict) -> dict | None:
    if len(args) == 3 and args[0] == TENSOR and not kwargs:
        return {"dim0": args[1], "dim1": args[2]}
    return None


def lift_softmax(args: list, kwargs: dict) -> dict | None:
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    if args[:1] == [TENSOR] and isinstance(dim, int) and kwargs.get("dtype") is None \
            and len(args) <= 2:
        return {"dim": dim}
    return None


def lift_conv2d(args: list, kwargs: dict) -> dict | None:
    """``F.conv2d(x, w, b, ...)`` with square stride and padding, no dilation."""
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    given = dict(zip(names, args)) | kwargs
    if [given.get(n) for n in names[:3]] != [{"in": 0}, {"in": 1}, {"in": 2}]:
        return None

    def square(v: Any, default: int) -> int | None:
        v = default if v is None else v
        v = list(v) if isinstance(v, (list, tuple)) else [v, v]
        return v[0] if len(v) == 2 and v[0] == v[1] and isinstance(v[0], int) else None

    stride, padding = square(given.get("stride"), 1), square(given.get("padding"), 0)
    dilation, groups = square(given.get("dilation"), 1), given.get("groups", 1)
    if None in (stride, padding) or dilation != 1 or not isinstance(groups, int):
        return None
    return {"stride": stride, "padding": padding, "groups": groups}


_MISSING = object()


def _plain(value: object) -> bool:
    """A constant an attr may hold: None, a bool, a number, text, or a tuple of numbers."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, (list, tuple)) and all(_number(v) for v in value)


def lift_signature(params: tuple[str, ...], defaults: dict, rename: dict | None = None,
                   fixed: dict | None = None) -> Callable[[list, dict], dict | None]:
    """``f(x, p0, p1, …)``: one tensor, then the parameters ``params`` by position or keyword
    (``defaults`` for those left out; one without a default is required), read into attrs of
    the same names (``rename``: another attr name). None where a value is not a plain constant,
    a required one is missing, or a ``fixed`` parameter holds another value than the op's
    template spells out (``topk(..., sorted=False)`` is not the ``topk`` entry)."""
    rename, fixed = rename or {}, fixed or {}

    def lift(args: list, kwargs: dict) -> dict | None:
        if not args or args[0] != TENSOR or len(args) - 1 > len(params) \
                or not set(kwargs) <= set(params):
            return None
        given = dict(zip(params, args[1:]))
        if set(given) & set(kwargs):
            return None
        given |= kwargs
        values = {p: given.get(p, defaults.get(p, _MISSING)) for p in params}
        if any(v is _MISSING or not _plain(v) for v in values.values()) \
                or any(values[p] != v for p, v in fixed.items()):
            return None
        return {rename.get(p, p): tuple(v) if isinstance(v, list) else v
                for p, v in values.items() if p not in fixed}

    return lift


def torch_names(name: str) -> tuple[str, ...]:
    """``torch.erf``, ``Tensor.erf`` and ``torch.special.erf``: the spellings of a plain
    elementwise function a captured model may use."""
    return (f"torch.{name}", f"Tensor.{name}", f"torch.special.{name}")


# ---------------------------------------------------------------- questions asked of the table


def capturing(target: str) -> list[OpSpec]:
    """The registry ops a captured call of ``target`` may be lifted to."""
    return [op for op in REGISTRY.values() if target in op.captures]


def tagged(tag: str) -> tuple[str, ...]:
    """The ops the generators may draw for ``tag`` (``OpSpec.tags``), in registration order."""
    return tuple(name for name, op in REGISTRY.items() if tag in op.tags)


def alias_of(name: str, attrs: dict) -> int | None:
    """Which input a node's value shares storage with: the entry's ``alias``, or for a generic
    call what capture saw it do (``attrs["alias"]``)."""
    value = attrs.get("alias", spec(name).alias) if name == "call" else spec(name).alias
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def mutates(name: str, attrs: dict) -> tuple[int, ...]:
    """Which inputs a node writes in place: the entry's ``mutates``, or for a generic call what
    capture saw it write (``attrs["mutates"]``)."""
    value = attrs.get("mutates", spec(name).mutates) if name == "call" else spec(name).mutates
    return tuple(int(i) for i in value)


def is_statement(name: str, attrs: dict) -> bool:
    """Does a node render as a statement naming no value of its own (``OpSpec.statement``; a
    captured ``x[i] = v``, whose generic call is ``operator.setitem``)?"""
    return spec(name).statement or (name == "call" and attrs.get("target") == "operator.setitem")


def spec(name: str) -> OpSpec:
    """The spec for ``name``; an unknown op is an invalid graph, never a KeyError traceback."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise InvalidGraph(f"unknown op {name!r}") from None


def infer(name: str, shapes: list[Shape], dtypes: list[str], attrs: dict) -> tuple[Shape, str]:
    """The shape and dtype op ``name`` gives inputs of these shapes and dtypes; InvalidGraph
    where its rules refuse them. The one place a spec's rules are applied: the IR infers every
    node through it, and the grammar asks it before choosing an operand."""
    op = spec(name)
    if op.arity >= 0 and len(shapes) != op.arity:
        raise InvalidGraph(f"{name} takes {op.arity} inputs")
    if op.infer is not None:
        shape, dtype = op.infer(shapes, dtypes, attrs)
        return tuple(shape), dtype
    return tuple(op.shape_rule(shapes, attrs)), op.dtype_rule(dtypes, attrs)


def accepts(name: str, shapes: list[Shape], dtypes: list[str], attrs: dict) -> bool:
    """Do op ``name``'s shape and dtype rules accept these inputs?"""
    try:
        infer(name, shapes, dtypes, attrs)
    except InvalidGraph:
        return False
    return True


def label(op: str, attrs: dict) -> str:
    """How a node reads in op chains and signatures: its op, or a generic call's target."""
    return str(attrs.get("target", op)) if op == "call" else op

"""What a graph says about its outputs' elements before they are compared (the oracle's semantics).

Questions only the graph can answer, asked of the float64 (and eager) values of every node:
- how far each element of a discrete head sits from the head's discontinuity (ulps of the working
  dtype; measured before any float step such as ceil that feeds the head, where the jump really
  is), and whether that is farther than eager's own noise there, so a flip can be graded as
  evidence; and whether a head's codes are ordered (nearer is better) or only right or wrong;
- which elements are undefined: an integer converted from a float64 NaN (C++ leaves the result
  undefined; for an unclamped cast, also from inf or out of the integer's range; for ``frexp``'s
  exponent, also from inf), never compared;
- what an index output selects (argmax, sort's and topk's indices, max_pool2d's; the registry's
  ``OpSpec.selects``, which a captured call of the same op is read by too): each index is
  judged by the value it picks from the op's input in float64 (``selections``,
  ``rules.selection_codes``), so a tie picked another way is no divergence, a worse pick is one
  (strong beyond eager's noise at the input, ``rules.selection_evidence``), and a stable sort's
  order of equal values counts; an index output whose input was not traced, or a captured call
  no entry can read, is left undefined;
- whether a float step further up (``round(x / 0.3)`` under a silu, ``x // 0.1`` on the other
  side of a compare) sits on a tie anywhere: its jump could be the flip, so none is strong;
- whether a discrete output is computed without floats at all (``EXACT``): integer arithmetic
  has no rounding noise, so every regressing element of it is strong evidence;
- where float64's own code survives the noise eager starts from (``stability``: the inputs
  nudged by an ulp): a chaotic head's flips are never evidence;
- the verdict itself: ``judge_graph`` hands all of it to ``oracle.judge``.
A value missing from ``values`` (a user's model judged on its outputs alone) means "no boundary,
nothing undefined" for that output.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

import torch

from fuzzer.ir import generic, ops
from fuzzer.ir.graph import Graph, Node, canonical_order
from fuzzer.judge import oracle, rules
from fuzzer.judge.details import Details
from fuzzer.judge.verdict import Verdict

EXACT: Final = "exact"  # evidence_source: a code computed without floats


def heads(graph: Graph, fp64: dict[int, torch.Tensor], eager: dict[int, torch.Tensor],
          floor: float = 0.0) -> list[oracle.Head | None]:
    """Per output: the evidence its head gives (``rules.evidence``, eager's noise at least
    ``floor`` ulps), or None for a float output, a head without a known discontinuity, or values
    that were not traced."""
    result: list[oracle.Head | None] = []
    for out in graph.outputs:
        source = evidence_source(graph, out)
        if source == EXACT:
            result.append(exact_head(fp64[out]) if out in fp64 else None)
            continue
        if source is None:
            result.append(None)
            continue
        at, boundary = source
        node = graph.node(at)
        if any(i not in fp64 or i not in eager for i in node.inputs):
            result.append(None)
            continue
        ins = [fp64[i].double().cpu() for i in node.inputs]
        head = oracle.Head(*rules.head_evidence(
            ins, eager[node.inputs[0]].cpu(), boundary, node.attrs,
            tuple(graph.node(out).shape), working_dtype(graph, at), floor))
        if any(_on_a_tie(graph, step, fp64, eager, floor) for step in upstream_steps(graph, at)):
            head.strong = torch.zeros_like(head.strong)
        result.append(head)
    return result


def upstream_steps(graph: Graph, at: int) -> list[int]:
    """The float steps further up than the measuring point ``at`` (see ``evidence_source``), in
    canonical order: their jumps reach the head through ops the evidence cannot follow."""
    above = set().union(*(graph.ancestors(i) | {i} for i in graph.node(at).inputs))
    return [n for n in canonical_order(graph) if n in above and step_of(graph, n) is not None]


def through_exact(graph: Graph, node: int) -> int:
    """``node``, or past it the value it passes on unchanged but for an exact, monotone,
    one-input elementwise op (a ``clamp`` with constant bounds, ``abs``, ``neg``): a head that
    reads ``clamp(round(y), -128, 127)`` can flip only where the round jumps
    (``torch.clamp(torch.round(x / s), -128, 127).to(torch.int8)``, a model's own quantize)."""
    while True:
        data = graph.node(node)
        spec = ops.REGISTRY.get(data.op)
        if spec is None or data.op not in PASSES_ON or len(data.inputs) != 1:
            return node
        node = data.inputs[0]


PASSES_ON = ("clamp", "abs", "neg")  # exact and monotone (abs piecewise): no jump of their own


def step_of(graph: Graph, node: int) -> ops.Boundary | None:
    """Where a one-input float step (floor, ceil, round, trunc, sign, ``x // c``) jumps."""
    data = graph.node(node)
    spec = ops.REGISTRY.get(data.op)
    if spec is None or spec.step is None or len(data.inputs) != 1 \
            or data.dtype not in ops.FLOAT_DTYPES:
        return None
    return spec.step


def _on_a_tie(graph: Graph, step: int, fp64: dict[int, torch.Tensor],
              eager: dict[int, torch.Tensor], floor: float) -> bool:
    source = graph.node(step).inputs[0]
    if source not in fp64 or source not in eager:
        return False
    return rules.on_a_tie([fp64[source].double().cpu()], eager[source].cpu(),
                          step_of(graph, step), graph.node(step).attrs,
                          working_dtype(graph, step), floor)


FLOATS = tuple(ops.torch_dtype(d) for d in ops.FLOAT_DTYPES)


def working_dtype(graph: Graph, node: int) -> torch.dtype:
    """The float dtype whose ulps measure a jump at ``node``: its first input's, or, where that
    input is an integer tensor (``int_x // 0.3``), the float dtype the node computes in. Integer
    inputs are exact; the rounding that can land either side of the jump is the node's own. (Not
    a float dtype where neither is: then nothing at ``node`` has ulps.)"""
    source = graph.node(graph.node(node).inputs[0]).dtype
    own = graph.node(node).dtype
    if source in ops.FLOAT_DTYPES or own not in ops.FLOAT_DTYPES:
        return ops.torch_dtype(source)
    return ops.torch_dtype(own)


def evidence_source(graph: Graph, out: int
                    ) -> tuple[int, ops.Boundary] | Literal["exact"] | None:
    """Where a discrete output's evidence is measured: ``EXACT`` when no float feeds it (integer
    arithmetic has no rounding noise) and no index output does (``reads_indices``); else the
    node whose first input is measured and the discontinuity there: the head's own, or, when a
    one-input head reads a float step (``sign(ceil(x))``), the step's, since the head can only
    flip where the step jumps; else None: no known discontinuity, or one whose inputs hold no
    floats although floats feed them further up (``all(a / b) < k``): no ulps to measure
    there."""
    node = graph.node(out)
    if node.dtype in ops.DISCRETE_DTYPES and not float_upstream(graph, out) \
            and not reads_indices(graph, out):  # an index among equal values is no less right
        return EXACT
    boundary = boundary_of(graph, node)
    if boundary is None:
        return None
    at = out
    while len(graph.node(at).inputs) == 1:
        feed = through_exact(graph, graph.node(at).inputs[0])
        step = step_of(graph, feed)
        if step is None:
            break
        at, boundary = feed, step
    if working_dtype(graph, at) not in FLOATS:
        return None
    return at, boundary


def float64_stands(graph: Graph) -> bool:
    """Can a float64 run stand for the program? Not where it reinterprets bits (a dtype view:
    float64's bits are other bits, its shapes other shapes); such a program is judged against
    eager (``runner``: eager's values stand for float64's, ``judge_graph``'s ``eager_stands``),
    and its verdict says so."""
    return not any(ops.spec(graph.node(n).op).bits for n in graph.op_ids())


def float_upstream(graph: Graph, node: int) -> bool:
    """Does any value feeding ``node`` (itself included) hold floats that rounding may have
    moved? Not floats read only as bits (a dtype view, ``OpSpec.bits``) where no op computed
    them: an input's bits enter exact, so integers read from them (``x.view(torch.int32)
    .index_add_(...)``) have no rounding noise and their regressions are strong evidence."""
    seen, todo = set(), [node]
    while todo:
        at = todo.pop()
        if at in seen:
            continue
        seen.add(at)
        data = graph.node(at)
        if data.dtype in ops.FLOAT_DTYPES:
            return True
        if not data.is_input and ops.spec(data.op).bits and not graph.rounded(data.inputs[0]):
            todo += data.inputs[1:]  # the source's bits are exact: only the other inputs feed
            continue
        todo += list(graph.producers(at))
    return False


def exact_head(value: torch.Tensor) -> oracle.Head:
    """Evidence for a code computed without floats: every regressing element is strong."""
    shape = value.shape
    return oracle.Head(value.double().cpu(), torch.full(shape, math.inf, dtype=torch.float64),
                       torch.zeros(shape, dtype=torch.float64), torch.ones(shape, dtype=torch.bool))


def ordinal(graph: Graph) -> list[bool]:
    """Per output: are its codes ordered (an exponent, a quantized level, an integer), so that
    nearer is better? Bool and sign codes are only right or wrong. An integer computed from an
    index output (a selection's indices offset or summed, ``indices + x``) is not: an index is
    not nearer or farther, and another index among equal values (two NaNs of one window) is as
    right, so its difference is never strong by distance (the index output itself is judged by
    the values it selects)."""
    return [graph.node(o).op != "sign_int8" and graph.node(o).dtype != "bool"
            and not reads_indices(graph, o) and not reads_rounded_bits(graph, o)
            for o in graph.outputs]


def reads_rounded_bits(graph: Graph, node: int) -> bool:
    """Is ``node`` an integer that reinterprets the bits of a float rounding may have moved (a
    dtype view of a tensor a float op computed or wrote, ``x.view(torch.int16)`` read after
    ``x.scatter_add_``)? Its steps are the float's ulps, not distances: a night drafted an int16
    view 8 steps from eager where the float16 under it was half an ulp of a partial sum away.
    Such an integer is not ordinal; the float itself is judged where it is an output or
    state."""
    return graph.node(node).dtype not in ops.FLOAT_DTYPES and float_upstream(graph, node) and \
        any(ops.spec(graph.node(a).op).bits for a in graph.ancestors(node) | {node}
            if not graph.node(a).is_input)


def reads_indices(graph: Graph, node: int) -> bool:
    """Is ``node`` computed from an index output (a selection op upstream, not itself)?"""
    return any(ops.spec(graph.node(a).op).selects is not None for a in graph.ancestors(node)
               if not graph.node(a).is_input)


def boundary_of(graph: Graph, node: Node) -> ops.Boundary | None:
    """The discontinuity of an output node's head, if it is a discrete head numfuzz knows."""
    spec = ops.REGISTRY.get(node.op)
    if node.op == "call" and generic.is_int_cast(node.attrs) and node.inputs \
            and graph.node(node.inputs[0]).dtype in ops.FLOAT_DTYPES:
        return ops.to_int_boundary  # a captured x.to(int8): flips at the integers
    return spec.boundary if spec is not None else None


def undefined_elements(graph: Graph, values: dict[int, torch.Tensor],
                       eager: dict | None = None) -> list[torch.Tensor | None]:
    """Per integer output: the elements whose value no rule defines (see the module docstring),
    from float64's ``values`` and, where given, ``eager``'s own: a conversion of a NaN eager's
    working dtype made (an overflow float64 does not have, times zero) is undefined whatever
    float64 says (a night's ``quant_int8`` of such a NaN: eager 0, compiled -128)."""
    result: list[torch.Tensor | None] = []
    for out in graph.outputs:
        node = graph.node(out)
        if is_index_output(node):  # judged by what it selects, where that can be read
            judged = _selects(node)[1] is not None and node.inputs[0] in values
            result.append(None if judged else torch.ones(tuple(node.shape), dtype=torch.bool))
            continue
        source = values.get(node.inputs[0]) if node.inputs else None
        if node.dtype == "bool" or node.dtype not in ops.DISCRETE_DTYPES \
                or source is None or not source.is_floating_point():
            result.append(None)
            continue
        bad = torch.isnan(source)
        own = (eager or {}).get(node.inputs[0])
        if isinstance(own, torch.Tensor) and own.is_floating_point() \
                and tuple(own.shape) == tuple(bad.shape):
            bad |= torch.isnan(own).to(bad.device)
        if ops.spec(node.op).unclamped:  # no clamp before the conversion
            info = torch.iinfo(ops.torch_dtype(node.dtype))
            bad |= (source < info.min) | (source > info.max) | torch.isinf(source)
        if node.op == "frexp":  # the exponent of an infinity is unspecified too
            bad |= torch.isinf(source)
        shape = tuple(node.shape)
        result.append(bad.cpu() if tuple(bad.shape) == shape else None)
    return result


def is_index_output(node: Node) -> bool:
    """Does the output hold int64 indices into its op's first input (argmax, sort's indices,
    max_pool2d's)? A registry op says so (``OpSpec.selects``); a captured call does where an
    entry capturing its target does, for the same element of its tuple."""
    return _selects(node)[0]


def _selects(node: Node) -> tuple[bool, ops.Selects | None, dict | None]:
    """Whether ``node`` is an index output, and the rule and attrs that judge it: a registry
    op's own; for a captured call, those of the entry capturing its target whose ``lift``
    reads the call's arguments (None where none does: then it cannot be judged)."""
    if node.dtype != "int64" or not node.inputs:
        return False, None, None
    pick = node.attrs.get("pick")
    if node.op != "call":
        spec = ops.REGISTRY.get(node.op)
        rule = spec.selects if spec is not None else None
        if rule is None or (rule.pick is not None and pick != rule.pick):
            return False, None, None
        return True, rule, dict(node.attrs)
    found = False
    for spec in ops.capturing(str(node.attrs.get("target", ""))):
        if spec.selects is None or pick != spec.selects.pick:
            continue
        found = True
        lift = spec.lift or ops.lift_exact(spec.arity)
        lifted = lift(list(node.attrs.get("args", [])), dict(node.attrs.get("kwargs", {})))
        if lifted is not None:
            return True, spec.selects, lifted
    return found, None, None


@dataclass
class Selection:
    """How one index output is judged (``rules.selection_codes``): the node it reads, the op's
    first input (``source``) and its working dtype, the rule (``OpSpec.selects``) and attrs."""

    out: int
    source: int
    rule: ops.Selects
    attrs: dict
    working: torch.dtype
    exact_ties: bool = False  # no op rounded on the way to the input: its ties are exact

    @property
    def ordered(self) -> bool:
        """Does the index among equal values count? Where a stable sort defines their order, and
        where torch documents the first (argmax, ``max(x, dim)``) on an input no op rounded: its
        ties are exact in eager, compiled and float64 alike. A tie that float noise made
        (values computed in floats) is no finding: another index there is no divergence."""
        return bool(self.rule.ordered_by and self.attrs.get(self.rule.ordered_by)) or \
            (self.rule.first and self.exact_ties)

    def fault(self, picked: tuple[float, float], valid: bool, indices: tuple[int, int]) -> str:
        """What is wrong with compiled's index at one element, in a title's words: ``out of
        range``; ``not <the minimum>`` where it selects another value than float64's index
        (``picked``: compiled's value, float64's); ``not the first of equal values`` where
        torch documents the first and the tie is exact (``indices``: compiled's, float64's),
        ``not in stable order`` where a stable sort orders equal values by position;
        '' where it is none of them (another index among equal values torch leaves open)."""
        if not valid:
            return "out of range"
        mine, right = picked
        if not (mine == right or (math.isnan(mine) and math.isnan(right))):
            return f"not {self.rule.picks}"
        if not self.ordered or indices[0] == indices[1]:
            return ""
        return "not the first of equal values" if self.rule.first and self.exact_ties else \
            "not in stable order"

    def picked(self, x: torch.Tensor, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The values of ``x`` (the input, or anything shaped like it) ``index`` picks."""
        return self.rule.select(x.cpu(), index.cpu().long(), self.attrs)

    def codes(self, x64: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return rules.selection_code(self.rule.select, self.attrs, self.ordered, x64, index)


def selections(graph: Graph, fp64: dict) -> list[Selection | None]:
    """Per output: how it is judged by what it selects, or None (not an index output, or one
    whose input float64 did not trace, or a captured call no entry reads)."""
    result: list[Selection | None] = []
    for out in graph.outputs:
        node = graph.node(out)
        _, rule, attrs = _selects(node)
        source = node.inputs[0] if node.inputs else None
        if rule is None or source is None or source not in fp64 or out not in fp64:
            result.append(None)
            continue
        result.append(Selection(out, source, rule, attrs or {},
                                ops.torch_dtype(graph.node(source).dtype),
                                exact_ties=not graph.rounded(source)))
    return result


def by_selection(picks: list[Selection | None], eager: list[torch.Tensor],
                 compiled: list[torch.Tensor], fp64: dict, eager_values: dict,
                 heads_: list[oracle.Head | None],
                 nudged: Callable[[], list[dict]] | None, floor: float = 0.0) -> tuple:
    """Each index output's indices turned into the codes of what they select (eager's,
    compiled's, float64's; float64's in ``fp64`` and in each nudged run too, so stability is
    measured on what float64 picks), and its head: the distance of compiled's pick from
    float64's against eager's noise at the input (``rules.selection_evidence``; an index out of
    range is always strong; eager's noise at least ``floor`` ulps). An output whose eager and
    compiled disagree in shape or dtype is left as it is (``meta``). Returns (eager, compiled,
    fp64, heads, nudged)."""
    eager, compiled, heads_ = list(eager), list(compiled), list(heads_)
    coded = {}
    for i, pick in enumerate(picks):
        if pick is None or i >= len(eager) or i >= len(compiled):
            continue
        e, c, r = eager[i].cpu(), compiled[i].cpu(), fp64[pick.out].cpu()
        if e.shape != c.shape or e.dtype != c.dtype or r.shape != e.shape:
            continue
        x64 = fp64[pick.source].cpu()
        eager[i], compiled[i], _, distance, noise, strong = rules.judge_selection(
            pick.rule.select, pick.attrs, pick.ordered, pick.working, x64,
            eager_values.get(pick.source), e, c, r, floor)
        chosen = pick.picked(x64, c)[0]
        heads_[i] = oracle.Head(chosen.double(), distance, noise, strong)
        coded[pick.out] = (pick, x64)
    if not coded:
        return eager, compiled, fp64, heads_, nudged
    fp64 = {**fp64, **{out: pick.codes(x64, fp64[out]) for out, (pick, x64) in coded.items()}}
    if nudged is not None:
        runs = nudged

        def nudged() -> list[dict]:  # the picks of each nudged run, coded by the reference
            return [{**run, **{out: pick.codes(x64, run[out]) for out, (pick, x64)
                               in coded.items() if out in run}} for run in runs()]

    return eager, compiled, fp64, heads_, nudged


def note_selections(verdict: Verdict, picks: list[Selection | None],
                    eager: list[torch.Tensor], compiled: list[torch.Tensor],
                    fp64: dict) -> None:
    """Say on each index output how it was judged, and beside each recorded element's codes the
    indices themselves (eager's, compiled's, float64's), the values they select from the op's
    input in float64, and what is wrong with compiled's (``Selection.fault``)."""
    for out in verdict.outputs:
        pick = picks[out.output] if out.output < len(picks) else None
        if pick is None or (out.details.reason or "").startswith("compiled gave"):
            continue
        out.details.judged_by = "the values its indices select (their rank in float64)"
        sides = (eager[out.output], compiled[out.output], fp64[pick.out])
        if any(side.shape != sides[0].shape for side in sides):
            continue
        x64 = fp64[pick.source].cpu()
        selected = [pick.picked(x64, side) for side in sides]
        for element in out.details.elements:
            at = tuple(element.index)
            if sides[0].dim() != len(at):
                continue
            element.eager_index, element.compiled_index, element.fp64_index = (
                int(side.cpu()[at]) for side in sides)
            values = [float(value[at]) for value, _ in selected]
            element.selected = [v if math.isfinite(v) else None for v in values]
            element.fault = pick.fault((values[1], values[2]), bool(selected[1][1][at]),
                                       (element.compiled_index, element.fp64_index))


def stability(graph: Graph, eager: list[torch.Tensor], compiled: list[torch.Tensor],
              fp64: dict, nudged: Callable[[], list[dict]] | None,
              keys: list | None = None) -> list[torch.Tensor | None]:
    """Per output: where float64's code survives input noise (``rules.stable_codes``), for the
    discrete outputs that a float feeds and whose codes differ between eager and compiled
    (the only ones a flip can be claimed on); None elsewhere. ``nudged`` gives float64's values
    with eager's rounding noise added back (``rules.nudge_``), asked only when some output needs
    it; a nudged run that raises leaves every such element unstable: what cannot be checked is
    not evidence."""
    keys = keys if keys is not None else list(graph.outputs)
    wanted = [i for i, o in enumerate(keys)
              if i < len(eager) and i < len(compiled) and not eager[i].is_floating_point()
              and eager[i].shape == compiled[i].shape and eager[i].dtype == compiled[i].dtype
              and bool((eager[i] != compiled[i].to(eager[i].device)).any())
              and o in fp64 and noise_reaches(graph, o)]
    result: list[torch.Tensor | None] = [None] * len(keys)
    if not wanted or nudged is None:
        return result
    try:
        runs = nudged()
    except Exception:  # noqa: BLE001 - an op the nudge pushed out of its domain, say
        runs = None
    for i in wanted:
        out = keys[i]
        ref = fp64[out].cpu()
        result[i] = torch.zeros(ref.shape, dtype=torch.bool) if runs is None else \
            rules.stable_codes(ref, [run[out].cpu() if out in run else ref.new_empty(0)
                                     for run in runs])
    return result


def zero_signs_defined(graph: Graph, key: int | tuple,
                       fp64: dict | None = None) -> bool | torch.Tensor:
    """Does the program define the sign of this judged value's zeros (``rules.
    zero_sign_regressions``)? Where every op it flows through does (``OpSpec.signs_zero``: IEEE
    and eager agree on it for ``minimum``, ``neg``, ``copysign``, a sum, a product, a view); one
    that may return either zero (a maximum among equal values, a reduction's identity) leaves
    it undefined. A written input's value flows through every write to it. With the float64
    values of every node (``fp64``), a per-element answer where an op leaves it undefined on
    those values (``OpSpec.unsigned``: a copysign of a NaN that arithmetic made, a maximum of
    -0.0 and +0.0, where eager and compiled may both be right)."""
    ends = [w for w in graph.op_ids() if key[1] in graph.writes(w)] \
        if isinstance(key, tuple) else [key]
    upstream = set(ends).union(*(graph.ancestors(n) for n in ends)) if ends else set()
    if not all(ops.spec(graph.node(n).op).signs_zero for n in upstream
               if not graph.node(n).is_input):
        return False
    defined: bool | torch.Tensor = True
    if fp64 is None:  # no values: no op's own answer to ask
        return defined
    for node_id in (n for n in upstream if not graph.node(n).is_input):
        unsigned = _unsigned(graph, node_id, fp64)
        if unsigned is None:
            continue
        shape = graph.node(key[1] if isinstance(key, tuple) else key).shape
        between = graph.descendants(node_id) & upstream
        if tuple(graph.node(node_id).shape) != tuple(shape) or any(
                ops.spec(graph.node(n).op).category not in ("elementwise", "binary")
                for n in between):
            return False  # its elements do not line up with the judged value's
        defined = defined & ~torch.broadcast_to(unsigned, shape)
    return defined


def _unsigned(graph: Graph, node_id: int, fp64: dict) -> torch.Tensor | None:
    """Where the op at ``node_id`` leaves the sign of a zero it makes undefined on these float64
    values (``OpSpec.unsigned``), in its own shape; None where nowhere."""
    node = graph.node(node_id)
    rule = ops.spec(node.op).unsigned
    values = [fp64.get(i) for i in (*node.inputs, node_id)]
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    if rule is None or len(tensors) != len(values):
        return None
    mask = rule([v.cpu() for v in tensors[:-1]], [graph.node(i).is_input for i in node.inputs],
                tensors[-1].cpu(), node.attrs)
    return torch.broadcast_to(mask, node.shape) if bool(mask.any()) else None


def noise_reaches(graph: Graph, key: int | tuple) -> bool:
    """Can eager's rounding noise reach this judged discrete value (``judged``: an output node,
    or a written input's ``("final", n)``)? Only then is its stability measured (``stability``;
    a repro measures it the same way)."""
    if isinstance(key, tuple):
        node = key[1]
        writers = [w for w in graph.op_ids() if node in graph.writes(w)]
        return graph.node(node).dtype not in ops.FLOAT_DTYPES and \
            any(float_upstream(graph, w) for w in writers)
    return graph.node(key).dtype not in ops.FLOAT_DTYPES and evidence_source(graph, key) != EXACT


STATE_KINDS = ("param", "buffer")  # an input's ``state`` attr: it is module state


def kinds(graph: Graph) -> list[str]:
    """Per input, ``param`` or ``buffer`` where the program is a module holding it as such (its
    ``state`` attr), else ``x`` (an argument); empty where no input is module state. A
    parameter packed into a flat buffer with others of its dtype (its ``flat`` group, an int)
    is ``param:<group>`` (``calling.Module`` builds the buffer)."""
    found: list[str] = []
    for n in graph.input_ids():
        attrs = graph.node(n).attrs
        state = attrs.get("state")
        kind = state if isinstance(state, str) and state in STATE_KINDS else "x"
        group = attrs.get("flat")
        if kind == "param" and type(group) is int and 0 <= group < 16:
            kind = f"param:{group}"
        found.append(kind)
    return found if any(k != "x" for k in found) else []


def judged(graph: Graph) -> list:
    """What a run of the program is judged on, in order: its outputs (their nodes), then the
    state it leaves behind: the final value of each graph input it writes, keyed
    ``("final", n)`` in a trace (``render``) and named by its input node ``n`` in a verdict."""
    return [*graph.outputs, *(("final", n) for n in graph.written_inputs())]


def strict_promised(graph: Graph, key: int | tuple) -> bool:
    """Does numerics="strict" promise eager's bits for this judged value: is every op it flows
    through one the promise covers (``OpSpec.strict``) or a view, and is it a float? (A sum
    over several dims, or with a dtype, is not covered: only ``sum`` over one dim is.)"""
    if isinstance(key, tuple):
        return False  # state a program leaves: its writes are not in the promise
    if graph.node(key).dtype not in ops.FLOAT_DTYPES:
        return False
    upstream = graph.ancestors(key) | {key}
    return all(ops.spec(graph.node(n).op).strict or ops.spec(graph.node(n).op).category ==
               "layout" for n in upstream if not graph.node(n).is_input)


def judge_graph(graph: Graph, eager: list[torch.Tensor], compiled: list[torch.Tensor],
                fp64: dict, eager_values: dict, policy: str = "float64",
                nudged: Callable[[], list[dict]] | None = None,
                eager_stands: bool = False) -> Verdict:
    """The verdict on one run, from the float64 and eager values of every node (or of the
    outputs only, for a model judged as itself), under ``policy`` (``kinds.POLICIES``): the
    outputs, then the state left behind (``judged``). ``nudged`` gives float64's values with
    eager's noise added back (``stability``); without it no code's stability is measured.
    ``eager_stands``: ``fp64`` holds eager's own values, where float64 cannot stand for the
    program (``float64_stands``); eager's noise, zero against itself, is then taken as at least
    ``rules.EAGER_NOISE_FLOOR`` ulps."""
    floor = rules.EAGER_NOISE_FLOOR if eager_stands else 0.0
    keys = judged(graph)[:len(eager)]
    states = [k[1] for k in keys if isinstance(k, tuple)]
    picks = selections(graph, fp64)  # index outputs: judged by what they select
    raw = (list(eager), list(compiled), fp64)
    eager, compiled, fp64, found, nudged = by_selection(
        picks, eager, compiled, fp64, eager_values, heads(graph, fp64, eager_values, floor),
        nudged, floor)
    ref = [fp64[k] for k in keys]
    verdict = oracle.judge(eager, compiled, ref,
                           found + [_state_head(graph, n, fp64) for n in states],
                           [*graph.outputs, *states][:len(keys)],
                           undefined_elements(graph, fp64, eager_values)
                           + [None] * len(states),
                           ordinal(graph) + [True] * len(states), policy,
                           stability(graph, eager, compiled, fp64, nudged, keys),
                           [zero_signs_defined(graph, k, raw[2]) for k in keys])
    note_selections(verdict, picks, *raw)
    for out in verdict.outputs[len(graph.outputs):]:
        out.details.state_of = out.node
    return verdict


def _state_head(graph: Graph, node: int, fp64: dict) -> oracle.Head | None:
    """A written input's evidence: exact when no float feeds the input or any write to it
    (integer state has no rounding noise), else unknown (the steps rule)."""
    if graph.node(node).dtype in ops.FLOAT_DTYPES:
        return None
    writers = [w for w in graph.op_ids() if node in graph.writes(w)]
    if any(float_upstream(graph, w) for w in writers) or ("final", node) not in fp64:
        return None
    return exact_head(fp64[("final", node)])


def aliasing_problems(graph: Graph, eager_did: tuple, compiled_did: tuple
                      ) -> list[tuple[int, str, Details]]:
    """What compiled did to storage that eager did not (``calling.call``'s record of each): an
    output sharing storage with other inputs than eager's output does (a view of an input that
    came back as a fresh tensor, or the reverse), or an input compiled changed although the
    program never writes it. (node, dtype, details) each, for ``oracle.with_aliasing``."""
    names = [graph.var(n) for n in graph.input_ids()]
    (eager_shares, _), (compiled_shares, touched) = eager_did, compiled_did

    def of(positions: tuple[int, ...]) -> str:
        return ", ".join(names[i] for i in positions) if positions else "no input"

    problems = []
    for i, (want, got) in enumerate(zip(eager_shares, compiled_shares)):
        if want != got and i < len(graph.outputs):
            node = graph.outputs[i]
            problems.append((node, graph.node(node).dtype, Details(
                reason=f"output {i} shares storage with {of(want)} in eager, with {of(got)} "
                       "compiled", of_output=i)))
    for i in touched:
        node = graph.input_ids()[i]
        problems.append((node, graph.node(node).dtype, Details(
            reason=f"compiled changed {names[i]}, which the program never writes",
            state_of=node)))
    return problems

"""Graph IR -> Python source. The text rendered here is what runs, and what repro files contain.

``render_model`` gives a standalone module defining ``model(...)``: plain torch code, one line per
node. ``render_trace`` gives the same body returning every intermediate value; it is only ever run
eagerly (float64 reference, eager values for the minimizer), where returning more changes nothing;
``render_nudged_trace`` the same with eager's rounding noise added back (the evidence rule).
``expression`` writes one node as a single nested expression of the inputs, for titles.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable

from fuzzer.ir import ops
from fuzzer.ir.graph import Graph, State

HEADER = "import torch\nimport torch.nn.functional as F\n"


def _lines(graph: Graph) -> list[tuple[int, str | None]]:
    """(node, its line) in statement order; a reread has no line (None): it reads an existing
    name again."""
    lines: list[tuple[int, str | None]] = []
    for node_id in graph.op_ids():
        node = graph.node(node_id)
        spec = ops.spec(node.op)
        text = spec.render([graph.var(i) for i in node.inputs], node.attrs)
        if ops.is_statement(node.op, node.attrs):
            lines.append((node_id, f"    {text}" if text else None))
        else:
            lines.append((node_id, f"    {graph.var(node_id)} = {text}"))
    return lines


def _body(graph: Graph, skip: tuple[int, ...] = ()) -> list[str]:
    return [line for node, line in _lines(graph) if line is not None and node not in skip]


def _trace_body(graph: Graph, after: Callable[[int], list[str]] | None = None) -> list[str]:
    """The body with, for a program with state, each value recorded right after its statement
    (``_v[n] = v.clone()``: a later write to its storage must not change what it was), and
    ``after(node)``'s lines after each node's own."""
    stateful = State.of(graph) is not None
    lines = ["    _v = {}"] if stateful else []
    if stateful:
        lines += [f"    _v[{n}] = {graph.var(n)}.clone()" for n in graph.input_ids()]
    for node_id, line in _lines(graph):
        if line is not None:
            lines.append(line)
        lines += after(node_id) if after is not None else []
        if stateful:
            lines.append(f"    _v[{node_id}] = {graph.var(node_id)}.clone()")
    return lines


def _trace_values(graph: Graph) -> str:
    """The trace's result: every node's value (as recorded, for a program with state) and the
    final value of each written graph input under ``("final", n)``."""
    stateful = State.of(graph) is not None
    finals = ", ".join(f"('final', {n}): {graph.var(n)}" for n in graph.written_inputs())
    if stateful:
        return f"{{**_v, {finals}}}" if finals else "_v"
    return "{" + ", ".join(f"{n}: {graph.var(n)}" for n in graph.order()) + "}"


def _signature(graph: Graph, name: str) -> str:
    return f"def {name}({', '.join(graph.var(i) for i in graph.input_ids())}):"


def render_function(graph: Graph, name: str = "model") -> str:
    """The model as a function returning a tuple of the graph's outputs. Where the caller
    passes views of its inputs as arguments of their own (``Graph.passed_views``), two
    functions: ``forward``, which takes them and is what a compiler compiles
    (``calling.compile_model``), and ``model``, the caller, which makes them and calls it."""
    outs = ", ".join(graph.var(o) for o in graph.outputs)
    trailing = "," if len(graph.outputs) == 1 else ""  # none: ``return ()``
    result = f"    return ({outs}{trailing})"
    passed = tuple(graph.passed_views())
    if not passed:
        return "\n".join([_signature(graph, name), *_body(graph), result])
    inputs = [graph.var(i) for i in graph.input_ids()]
    views = [ops.spec(graph.node(n).op).render([graph.var(graph.node(n).inputs[0])],
                                                graph.node(n).attrs) for n in passed]
    forward = "\n".join([f"def forward({', '.join([*inputs, *map(graph.var, passed)])}):",
                         *_body(graph, skip=passed), result])
    caller = "\n".join([f"def {name}({', '.join(inputs)}, *, forward=forward):",
                        "    # views of the inputs passed beside them: arguments that alias",
                        f"    return forward({', '.join([*inputs, *views])})"])
    return f"{forward}\n\n\n{caller}"


def render_model(graph: Graph) -> str:
    return f"{HEADER}\n\n{render_function(graph)}\n"


def render_trace_function(graph: Graph) -> str:
    """Same body as ``render_function``, returning {node id: value} for every node (and the
    final values of the inputs it writes: ``_trace_values``)."""
    return "\n".join([_signature(graph, "trace"), *_trace_body(graph),
                      f"    return {_trace_values(graph)}"])


def render_trace(graph: Graph) -> str:
    return f"{HEADER}\n\n{render_trace_function(graph)}\n"


def render_nudged_trace_function(graph: Graph) -> str:
    """The trace with every value eager rounds nudged in place after its line: ``nudged_trace(k,
    *inputs)`` calls ``nudge_(value, dtype, k, node)`` (``judge.rules``, in the caller's scope)
    on each float node whose op is not exact (``OpSpec.exact``), with the dtype eager computes
    it in. Run in float64, it shows whether a discrete code survives eager's own noise."""
    def nudge(node_id: int) -> list[str]:
        node = graph.node(node_id)
        if node.dtype in ops.FLOAT_DTYPES and not ops.spec(node.op).exact:
            return [f"    nudge_({graph.var(node_id)}, torch.{node.dtype}, _k, {node_id})"]
        return []

    args = ", ".join(["_k", *(graph.var(i) for i in graph.input_ids())])
    return "\n".join([f"def nudged_trace({args}):", *_trace_body(graph, nudge),
                      f"    return {_trace_values(graph)}"])


def render_bit_noise_trace_function(graph: Graph) -> str:
    """The trace with the float that each dtype view reinterprets moved one step of its dtype
    per element right after the view is made (so through it too): ``bit_noise_trace(k,
    *inputs)`` calls ``step_bits_(value, k, node)`` (``judge.rules``, in the caller's scope) on
    the view's source, where any op computed it (``OpSpec.exact`` ops pass their input's bits
    on): the rounding noise a compiled kernel may make, which the reinterpreted bits amplify.
    Run in eager, it shows which elements of a program judged against eager that noise
    moves."""
    points = bit_noise_points(graph)

    def noisy(node_id: int) -> list[str]:
        source = points.get(node_id)
        return [] if source is None else [f"    step_bits_({graph.var(source)}, _k, {node_id})"]

    args = ", ".join(["_k", *(graph.var(i) for i in graph.input_ids())])
    return "\n".join([f"def bit_noise_trace({args}):", *_trace_body(graph, noisy),
                      f"    return {_trace_values(graph)}"])


def bit_noise_points(graph: Graph) -> dict[int, int]:
    """Per dtype view that reinterprets a computed float (some op upstream of it rounds: not an
    input's bits, nor only ``exact`` ops between), that float's node."""
    points = {}
    for node_id in graph.op_ids():
        node = graph.node(node_id)
        if not ops.spec(node.op).bits or graph.node(node.inputs[0]).dtype not in ops.FLOAT_DTYPES:
            continue
        source = node.inputs[0]
        if graph.rounded(source):
            points[node_id] = source
    return points


def bit_noise_sources(graph: Graph) -> bool:
    """Does the bit-noise trace move anything (``render_bit_noise_trace_function``)?"""
    return bool(bit_noise_points(graph))


def render_bit_noise_trace(graph: Graph) -> str:
    return f"{HEADER}\n\n{render_bit_noise_trace_function(graph)}\n"


def render_nudged_trace(graph: Graph) -> str:
    return f"{HEADER}\n\n{render_nudged_trace_function(graph)}\n"


def expression(graph: Graph, node: int, names: dict[int, str] | None = None,
               longest: int | None = None, limit: int | None = None) -> str:
    """``node`` as one nested expression of the graph's inputs, the same templates as
    ``render_function`` with each argument's expression in place (``torch.sign(torch.expm1(x))``);
    inputs are called ``names[n]``, else as in the function (``x0``). With ``longest``, an op
    whose own template is longer than that is written by its label (``e8m0(x * 3.0)``). With
    ``limit``, ValueError as soon as a part is longer: a value used twice doubles the text at
    each use (``add(v, v)`` forty deep is 2**40 characters)."""
    names = names or {}
    done: dict[int, str] = {}
    if node not in graph:
        raise KeyError(node)
    needed = graph.ancestors(node) | {node}
    for n in (n for n in graph.order() if n in needed):
        data = graph.node(n)
        if data.is_input:
            done[n] = names.get(n, graph.var(n))
        elif ops.spec(data.op).renews:  # a reread renders as nothing: its alias read again
            done[n] = done[data.inputs[0]]
        else:
            spec = ops.spec(data.op)
            own = spec.render([f"a{i}" for i in range(len(data.inputs))], data.attrs)
            if longest is not None and len(own) > longest:
                done[n] = f"{data.label}({', '.join(done[i] for i in data.inputs)})"
            else:
                done[n] = spec.render([_atom(done[i]) for i in data.inputs], data.attrs)
        if limit is not None and len(done[n]) > limit:
            raise ValueError(f"the expression of node {n} is longer than {limit} characters")
        if n == node:
            return done[n]
    raise KeyError(node)


def _atom(text: str) -> str:
    """``text`` usable as an argument or operand: a name, a call or a chain of calls stays
    (``torch.sign(v).to(torch.int8)``), anything else is wrapped in parentheses (``a + b``)."""
    return text if _is_primary(text) else f"({text})"


def _is_primary(text: str) -> bool:
    """Is ``text`` a name followed only by calls and attribute accesses?"""
    at = 0
    while at < len(text):
        name = re.match(r"[\w.]+", text[at:])
        if name is None:
            return False
        at += name.end()
        while at < len(text) and text[at] == "(":
            at = _matching(text, at) + 1
            if at == 0:
                return False
        if at < len(text) and text[at] != ".":
            return False
    return True


def _matching(text: str, opening: int) -> int:
    """Where the parenthesis at ``opening`` closes (-1: never)."""
    depth = 0
    for i in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


_counter = 0


def load(source: str, name: str, scope: dict | None = None) -> Callable:
    """Execute rendered source and return the function ``name`` it defines; ``scope`` names
    what the source calls without importing it (``nudge_`` for a nudged trace).

    The text is registered with linecache so tracebacks (and Dynamo's messages) show the real lines.
    """
    global _counter
    _counter += 1
    filename = f"<numfuzz-{name}-{_counter}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = dict(scope or {})
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]

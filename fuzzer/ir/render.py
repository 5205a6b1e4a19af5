"""Graph IR -> Python source. The text rendered here is what runs, and what repro files contain.

``render_model`` gives a standalone module defining ``model(...)``: plain torch code, one line per
node. ``render_trace`` gives the same body returning every intermediate value; it is only ever run
eagerly (float64 reference, eager values for the minimizer), where returning more changes nothing.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable

from fuzzer.ir import ops
from fuzzer.ir.graph import Graph

HEADER = "import torch\nimport torch.nn.functional as F\n"


def _body(graph: Graph) -> list[str]:
    lines = []
    for node_id in graph.op_ids():
        node = graph.node(node_id)
        args = [graph.var(i) for i in node.inputs]
        expr = ops.spec(node.op).render(args, node.attrs)
        lines.append(f"    {graph.var(node_id)} = {expr}")
    return lines


def _signature(graph: Graph, name: str) -> str:
    return f"def {name}({', '.join(graph.var(i) for i in graph.input_ids())}):"


def render_function(graph: Graph, name: str = "model") -> str:
    """The model as a function returning a tuple of the graph's outputs."""
    outs = ", ".join(graph.var(o) for o in graph.outputs)
    trailing = "," if len(graph.outputs) == 1 else ""
    return "\n".join([_signature(graph, name), *_body(graph), f"    return ({outs}{trailing})"])


def render_model(graph: Graph) -> str:
    return f"{HEADER}\n\n{render_function(graph)}\n"


def render_trace_function(graph: Graph) -> str:
    """Same body as ``render_function``, returning {node id: value} for every node."""
    values = ", ".join(f"{n}: {graph.var(n)}" for n in graph.order())
    return "\n".join([_signature(graph, "trace"), *_body(graph), f"    return {{{values}}}"])


def render_trace(graph: Graph) -> str:
    return f"{HEADER}\n\n{render_trace_function(graph)}\n"


_counter = 0


def load(source: str, name: str) -> Callable:
    """Execute rendered source and return the function ``name`` it defines.

    The text is registered with linecache so tracebacks (and Dynamo's messages) show the real lines.
    """
    global _counter
    _counter += 1
    filename = f"<numfuzz-{name}-{_counter}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]

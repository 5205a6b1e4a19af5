"""The graph IR: the one thing passed between generator, renderer, runner, minimizer and triage.

A ``Graph`` wraps a networkx DiGraph (which holds the wiring networkx's algorithms walk) whose
nodes each carry one ``Node``: ``op`` (a registry name), ``attrs`` (plain values), ``inputs``
(ordered node ids: an op may read the same value twice, which a DiGraph edge cannot say) and the
inferred ``shape`` and ``dtype``. It serializes to a plain dict of ints, strings and lists, so
case files never hold pickled classes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from fuzzer.ir import ops

IR_VERSION = 1


@dataclass
class Node:
    """One graph node: an op applied to earlier nodes, or a graph input (op ``input``)."""

    id: int
    op: str
    inputs: list[int] = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    shape: ops.Shape = ()  # inferred from the inputs' (an input carries its own)
    dtype: str = ""

    @property
    def is_input(self) -> bool:
        return self.op == "input"

    @property
    def role(self) -> str:
        """An input's role: ``x`` an activation, ``w`` a weight; the grammar may name others."""
        return str(self.attrs.get("role", "x"))

    @property
    def label(self) -> str:
        """How the node reads in op chains and signatures (``ops.label``)."""
        return ops.label(self.op, self.attrs)


class Graph:
    """A dataflow graph of registry ops; graph inputs are nodes with op ``input``."""

    def __init__(self) -> None:
        self.g = nx.DiGraph()
        self.outputs: list[int] = []
        self._next_id = 0

    # ------------------------------------------------------------ building

    def add(self, op: str, inputs: Iterable[int] = (), shape: tuple[int, ...] | None = None,
            dtype: str | None = None, **attrs: Any) -> int:
        """Append a node, inferring its shape and dtype from its spec (inputs give theirs)."""
        node_id = self._next_id
        self._next_id += 1
        inputs = list(inputs)
        for src in inputs:
            if src not in self.g:
                raise ops.InvalidGraph(f"node {node_id} reads missing node {src}")
        self._put(Node(node_id, op, inputs, attrs, tuple(shape or ()), dtype or ""))
        if op != "input":
            self._infer_node(node_id)
        return node_id

    def _put(self, node: Node) -> None:
        self.g.add_node(node.id, node=node)
        for src in node.inputs:
            self.g.add_edge(src, node.id)

    def _infer_node(self, node_id: int) -> None:
        node = self.node(node_id)
        if node.is_input:  # inputs carry their own shape and dtype
            return
        ins = [self.node(i) for i in node.inputs]
        node.shape, node.dtype = ops.infer(node.op, [i.shape for i in ins],
                                           [i.dtype for i in ins], node.attrs)

    def infer(self) -> None:
        """Re-derive every shape and dtype from the inputs; InvalidGraph if any rule fails."""
        for node_id in self.order():
            self._infer_node(node_id)

    # ------------------------------------------------------------ reading

    def node(self, node_id: int) -> Node:
        return self.g.nodes[node_id]["node"]

    def nodes(self) -> list[Node]:
        """Every node, in ``order``."""
        return [self.node(n) for n in self.order()]

    def order(self) -> list[int]:
        """Topological order, ties broken by id so that rendering is deterministic."""
        return list(nx.lexicographical_topological_sort(self.g))

    def input_ids(self) -> list[int]:
        return [n for n in self.order() if self.node(n).is_input]

    def op_ids(self) -> list[int]:
        return [n for n in self.order() if not self.node(n).is_input]

    def consumers(self, node_id: int) -> list[int]:
        return sorted(self.g.successors(node_id))

    def var(self, node_id: int) -> str:
        """The Python name of a node's value: ``x3`` for activations, ``w3`` for parameters."""
        node = self.node(node_id)
        if node.is_input:
            return ("x" if node.role == "x" else "p") + str(node_id)
        return f"v{node_id}"

    def op_names(self) -> list[str]:
        """Op per node in order; a generic call reads as its target (``F.pad``)."""
        return [self.node(n).label for n in self.op_ids()]

    def __len__(self) -> int:
        return len(self.op_ids())

    # ------------------------------------------------------------ editing

    def copy(self) -> Graph:
        return Graph.from_dict(self.to_dict())

    def replace_uses(self, old: int, new: int, users: Iterable[int] | None = None) -> None:
        """Make every consumer (and output slot) of ``old`` read ``new`` instead; with ``users``,
        only those consumers (a node spliced in after ``old`` keeps reading it)."""
        for user in self.consumers(old) if users is None else list(users):
            node = self.node(user)
            node.inputs = [new if i == old else i for i in node.inputs]
            self.g.remove_edge(old, user)
            self.g.add_edge(new, user)
        self.outputs = [new if o == old else o for o in self.outputs]

    def remove_dead(self) -> None:
        """Drop nodes no output depends on (inputs included, so dead arguments vanish too)."""
        live = set(self.outputs)
        for out in self.outputs:
            live |= nx.ancestors(self.g, out)
        self.g.remove_nodes_from([n for n in list(self.g) if n not in live])

    def relabel(self) -> dict[int, int]:
        """Canonical renaming: ids 0..n-1 in ``canonical_order``. Returns old -> new."""
        mapping = {old: new for new, old in enumerate(canonical_order(self))}
        self.g = nx.relabel_nodes(self.g, mapping)
        for node_id in self.g:
            node = self.node(node_id)
            node.id = node_id
            node.inputs = [mapping[i] for i in node.inputs]
        self.outputs = [mapping[o] for o in self.outputs]
        self._next_id = len(mapping)
        return mapping

    # ------------------------------------------------------------ serialization

    def to_dict(self) -> dict:
        nodes = [{"id": node.id, "op": node.op, "inputs": list(node.inputs),
                  "attrs": _plain(node.attrs), "shape": list(node.shape), "dtype": node.dtype}
                 for node in self.nodes()]
        return {"ir_version": IR_VERSION, "nodes": nodes, "outputs": list(self.outputs)}

    @classmethod
    def from_dict(cls, data: dict) -> Graph:
        """Rebuild and re-check a graph; anything malformed raises InvalidGraph."""
        try:
            if data.get("ir_version") != IR_VERSION:
                raise ops.InvalidGraph(f"IR version {data.get('ir_version')!r}, "
                                       f"expected {IR_VERSION}")
            graph = cls()
            for raw in data["nodes"]:
                node_id = int(raw["id"])
                if node_id in graph.g:
                    raise ops.InvalidGraph(f"node {node_id} is defined twice")
                attrs = _tuples(_plain(dict(raw["attrs"])))  # plain data only, never objects
                srcs = [int(i) for i in raw["inputs"]]
                for src in srcs:  # only earlier nodes: no self-reads, no cycles
                    if src not in graph.g:
                        raise ops.InvalidGraph(f"node {node_id} reads unknown node {src}")
                graph._put(Node(node_id, str(raw["op"]), srcs, attrs,
                                tuple(int(s) for s in raw["shape"]), str(raw["dtype"])))
                graph._next_id = max(graph._next_id, node_id + 1)
            graph.outputs = [int(o) for o in data["outputs"]]
            if not graph.outputs or any(o not in graph.g for o in graph.outputs):
                raise ops.InvalidGraph("graph has no valid outputs")
            for node_id in graph.input_ids():
                ops.torch_dtype(graph.node(node_id).dtype)
            graph.infer()  # shape rules read attrs: a missing or mistyped one is malformed too
            for node_id in graph.op_ids():  # and every node renders: templates read attrs too
                node = graph.node(node_id)
                ops.spec(node.op).render([f"a{i}" for i in range(len(node.inputs))], node.attrs)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError,
                RuntimeError, RecursionError) as err:
            if isinstance(err, ops.InvalidGraph):
                raise
            raise ops.InvalidGraph(f"malformed graph: {err!r}") from None
        return graph

    def digest(self) -> str:
        """Hash of the canonical form: equal for graphs that differ only in node ids."""
        canon = self.copy()
        canon.relabel()
        text = json.dumps(canon.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------- the canonical form
# One canonicalization for every use: digests (the minimizer's cache, case file names), relabelling
# (minimized cases), op chains (signatures) and titles. A walk by argument position is exact for
# this IR, whose inputs are ordered; a Weisfeiler-Lehman hash would be a hash of a hash that can
# collide, and would need argument positions spelled into edge labels to say as much.


def canonical_order(graph: Graph) -> list[int]:
    """Nodes in post-order of a walk from the outputs (in order) through each node's arguments
    (in order), then any node no output reads, in topological order. The walk follows structure,
    never ids, so renaming nodes cannot change it; every node comes after its arguments."""
    order: list[int] = []
    seen: set[int] = set()
    for out in graph.outputs:
        stack: list[tuple[int, bool]] = [(out, False)]
        while stack:
            node, expanded = stack.pop()
            if node in seen:
                continue
            if expanded:
                seen.add(node)
                order.append(node)
                continue
            stack.append((node, True))
            for arg in reversed(graph.node(node).inputs):
                if arg not in seen:
                    stack.append((arg, False))
    return order + [n for n in graph.order() if n not in seen]


def op_chain(graph: Graph) -> list[str]:
    """The canonical op chain: ``op(%i,%j)`` per node, wiring by canonical position, inputs as
    ``input``, outputs marked; no constants, shapes or ids."""
    order = canonical_order(graph)
    position = {node: i for i, node in enumerate(order)}
    chain = []
    for node in order:
        data = graph.node(node)
        args = ",".join(f"%{position[a]}" for a in data.inputs)
        text = "input" if data.is_input else f"{data.label}({args})"
        if node in graph.outputs:
            text += f"->out{graph.outputs.index(node)}"
        chain.append(text)
    return chain


def readable_chain(graph: Graph, limit: int = 8) -> str:
    """``gelu → e8m0`` for titles: the ops in canonical order, long chains elided."""
    names = [graph.node(n).label for n in canonical_order(graph) if not graph.node(n).is_input]
    if len(names) > limit:
        names = names[:limit // 2] + ["…"] + names[-(limit // 2):]
    return " → ".join(names)


def _plain(value: Any) -> Any:
    """Attrs as JSON-able values: tuples become lists (restored by ``_tuples``)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise ops.InvalidGraph(f"attribute value {value!r} is not plain data")


def _tuples(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value

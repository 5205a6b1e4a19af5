"""The graph IR: the one thing passed between generator, renderer, runner, minimizer and triage.

A ``Graph`` wraps a networkx DiGraph whose nodes carry ``op`` (a registry name), ``attrs`` (plain
values), ``inputs`` (ordered node ids: an op may read the same value twice, which a DiGraph edge
cannot say) and the inferred ``shape`` and ``dtype``. It serializes to a plain dict of ints, strings
and lists, so case files never hold pickled classes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import networkx as nx

from fuzzer import ops

IR_VERSION = 1


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
        self.g.add_node(node_id, op=op, attrs=attrs, inputs=inputs, shape=shape, dtype=dtype)
        for src in inputs:
            self.g.add_edge(src, node_id)
        if op != "input":
            self._infer_node(node_id)
        return node_id

    def _infer_node(self, node_id: int) -> None:
        node = self.g.nodes[node_id]
        spec = ops.spec(node["op"])
        if spec.name == "input":
            return
        if spec.arity >= 0 and len(node["inputs"]) != spec.arity:
            raise ops.InvalidGraph(f"{spec.name} takes {spec.arity} inputs")
        shapes = [self.g.nodes[i]["shape"] for i in node["inputs"]]
        dtypes = [self.g.nodes[i]["dtype"] for i in node["inputs"]]
        if spec.infer is not None:
            shape, node["dtype"] = spec.infer(shapes, dtypes, node["attrs"])
            node["shape"] = tuple(shape)
            return
        node["shape"] = tuple(spec.shape_rule(shapes, node["attrs"]))
        node["dtype"] = spec.dtype_rule(dtypes, node["attrs"])

    def infer(self) -> None:
        """Re-derive every shape and dtype from the inputs; InvalidGraph if any rule fails."""
        for node_id in self.order():
            self._infer_node(node_id)

    # ------------------------------------------------------------ reading

    def node(self, node_id: int) -> dict:
        return self.g.nodes[node_id]

    def order(self) -> list[int]:
        """Topological order, ties broken by id so that rendering is deterministic."""
        return list(nx.lexicographical_topological_sort(self.g))

    def input_ids(self) -> list[int]:
        return [n for n in self.order() if self.g.nodes[n]["op"] == "input"]

    def op_ids(self) -> list[int]:
        return [n for n in self.order() if self.g.nodes[n]["op"] != "input"]

    def consumers(self, node_id: int) -> list[int]:
        return sorted(self.g.successors(node_id))

    def var(self, node_id: int) -> str:
        """The Python name of a node's value: ``x3`` for activations, ``w3`` for parameters."""
        node = self.g.nodes[node_id]
        if node["op"] == "input":
            return ("x" if node["attrs"].get("role", "x") == "x" else "p") + str(node_id)
        return f"v{node_id}"

    def op_names(self) -> list[str]:
        """Op per node in order; a generic call reads as its target (``F.pad``)."""
        return [ops.label(self.g.nodes[n]["op"], self.g.nodes[n]["attrs"]) for n in self.op_ids()]

    def __len__(self) -> int:
        return len(self.op_ids())

    # ------------------------------------------------------------ editing

    def copy(self) -> Graph:
        return Graph.from_dict(self.to_dict())

    def replace_uses(self, old: int, new: int, users: Iterable[int] | None = None) -> None:
        """Make every consumer (and output slot) of ``old`` read ``new`` instead; with ``users``,
        only those consumers (a node spliced in after ``old`` keeps reading it)."""
        for user in self.consumers(old) if users is None else list(users):
            node = self.g.nodes[user]
            node["inputs"] = [new if i == old else i for i in node["inputs"]]
            self.g.remove_edge(old, user)
            self.g.add_edge(new, user)
        self.outputs = [new if o == old else o for o in self.outputs]

    def set_input(self, node_id: int, position: int, new: int) -> None:
        node = self.g.nodes[node_id]
        old = node["inputs"][position]
        node["inputs"][position] = new
        if old not in node["inputs"]:
            self.g.remove_edge(old, node_id)
        self.g.add_edge(new, node_id)

    def remove_dead(self) -> None:
        """Drop nodes no output depends on (inputs included, so dead arguments vanish too)."""
        live = set(self.outputs)
        for out in self.outputs:
            live |= nx.ancestors(self.g, out)
        self.g.remove_nodes_from([n for n in list(self.g) if n not in live])

    def relabel(self) -> dict[int, int]:
        """Canonical renaming: ids 0..n-1 in topological order. Returns old -> new."""
        mapping = {old: new for new, old in enumerate(self.order())}
        self.g = nx.relabel_nodes(self.g, mapping)
        for node_id in self.g:
            node = self.g.nodes[node_id]
            node["inputs"] = [mapping[i] for i in node["inputs"]]
        self.outputs = [mapping[o] for o in self.outputs]
        self._next_id = len(mapping)
        return mapping

    # ------------------------------------------------------------ serialization

    def to_dict(self) -> dict:
        nodes = []
        for node_id in self.order():
            node = self.g.nodes[node_id]
            nodes.append({
                "id": node_id,
                "op": node["op"],
                "inputs": list(node["inputs"]),
                "attrs": _plain(node["attrs"]),
                "shape": list(node["shape"]),
                "dtype": node["dtype"],
            })
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
                attrs = _tuples(dict(raw["attrs"]))
                srcs = [int(i) for i in raw["inputs"]]
                for src in srcs:  # only earlier nodes: no self-reads, no cycles
                    if src not in graph.g:
                        raise ops.InvalidGraph(f"node {node_id} reads unknown node {src}")
                graph.g.add_node(node_id, op=str(raw["op"]), attrs=attrs, inputs=srcs,
                                 shape=tuple(int(s) for s in raw["shape"]),
                                 dtype=str(raw["dtype"]))
                for src in srcs:
                    graph.g.add_edge(src, node_id)
                graph._next_id = max(graph._next_id, node_id + 1)
            graph.outputs = [int(o) for o in data["outputs"]]
            if not graph.outputs or any(o not in graph.g for o in graph.outputs):
                raise ops.InvalidGraph("graph has no valid outputs")
            for node_id in graph.input_ids():
                ops.torch_dtype(graph.node(node_id)["dtype"])
            graph.infer()  # shape rules read attrs: a missing or mistyped one is malformed too
        except (KeyError, TypeError, ValueError, AttributeError, IndexError,
                ArithmeticError) as err:
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

    def signature_ops(self) -> list[str]:
        """Op chain with wiring but without constants or shapes: what a bug signature keys on."""
        canon = self.copy()
        canon.relabel()
        parts = []
        for node_id in canon.op_ids():
            node = canon.node(node_id)
            label = ops.label(node["op"], node["attrs"])
            parts.append(f"{label}({','.join(str(i) for i in node['inputs'])})")
        return parts


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

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
# ``State.of``'s cache on a graph: (the key, the state, a stateless graph's order)
StateCache = tuple[tuple[object, ...], "State | None", list[int] | None]


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
        self._state: StateCache | None = None  # State.of's cache

    # ------------------------------------------------------------ building

    def add(self, op: str, inputs: Iterable[int] = (), shape: tuple[int, ...] | None = None,
            dtype: str | None = None, **attrs: object) -> int:
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
        """Re-derive every shape and dtype from the inputs; InvalidGraph if any rule fails, or
        if a node reads a version of a storage that a write it depends on replaced
        (``State.check``)."""
        for node_id in list(nx.lexicographical_topological_sort(self.g)):
            self._infer_node(node_id)
        state = State.of(self)
        if state is not None:
            state.check()

    # ------------------------------------------------------------ reading

    def node(self, node_id: int) -> Node:
        return self.g.nodes[node_id]["node"]

    def nodes(self) -> list[Node]:
        """Every node, in ``order``."""
        return [self.node(n) for n in self.order()]

    def order(self) -> list[int]:
        """Statement order: topological in the data edges and, in a program with state, in the
        order edges too (``State.order_edges``: a read of a storage comes before the next write
        to it); ties broken by id so that rendering is deterministic."""
        state = State.of(self)
        if state is not None:
            return list(state.order)
        assert self._state is not None  # State.of left its cache
        key, _, plain = self._state
        if plain is None:
            plain = list(nx.lexicographical_topological_sort(self.g))
            self._state = (key, None, plain)
        return list(plain)

    def input_ids(self) -> list[int]:
        return [n for n in self.order() if self.node(n).is_input]

    def op_ids(self) -> list[int]:
        return [n for n in self.order() if not self.node(n).is_input]

    def consumers(self, node_id: int) -> list[int]:
        return sorted(self.g.successors(node_id))

    def producers(self, node_id: int) -> list[int]:
        """The nodes ``node_id`` reads (its data edges in), each once."""
        return sorted(self.g.predecessors(node_id))

    def ancestors(self, node_id: int) -> set[int]:
        """Every node ``node_id``'s value depends on (itself not included)."""
        return set(nx.ancestors(self.g, node_id))

    def descendants(self, node_id: int) -> set[int]:
        """Every node whose value depends on ``node_id``'s (itself not included)."""
        return set(nx.descendants(self.g, node_id))

    def node_ids(self) -> list[int]:
        """Every node id, inputs included, in no particular order."""
        return list(self.g)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.g

    def var(self, node_id: int) -> str:
        """The Python name of a node's value: ``x3`` for activations, ``p3`` for parameters and
        other state; a statement (``x[1:] = y``, ``x.add_(y)``) or a reread names no value of
        its own: it is the tensor it wrote, or read again, under that tensor's name."""
        node = self.node(node_id)
        if node.is_input:
            return ("x" if node.role == "x" else "p") + str(node_id)
        if ops.is_statement(node.op, node.attrs):
            return self.var(node.inputs[ops.alias_of(node.op, node.attrs) or 0])
        return f"v{node_id}"

    def passed_views(self) -> list[int]:
        """Views the caller makes of a graph input and passes beside it, as arguments of their
        own (``attrs["passed"]``): the compiled function then receives inputs that alias each
        other, which Dynamo and AOTAutograd handle apart (overlap checks, synthetic bases). Only
        a view read straight off an input, before any write, can be one; a ``passed`` view that
        an edit left anywhere else is an ordinary view inside the function."""
        return [n for n in self.op_ids()
                if self.node(n).attrs.get("passed") and ops.spec(self.node(n).op).alias == 0
                and ops.spec(self.node(n).op).category == "view"
                and len(self.node(n).inputs) == 1 and self.node(self.node(n).inputs[0]).is_input]

    def op_names(self) -> list[str]:
        """Op per node in order; a generic call reads as its target (``F.pad``)."""
        return [self.node(n).label for n in self.op_ids()]

    def __len__(self) -> int:
        """The ops a reader reads: every node but inputs and rereads (which render as nothing)."""
        return sum(not ops.spec(self.node(n).op).renews for n in self.op_ids())

    # ------------------------------------------------------------ editing

    def copy(self) -> Graph:
        return Graph.from_dict(self.to_dict())

    def remove_node(self, node_id: int) -> None:
        """Drop a node (the caller rewires or drops what read it)."""
        self.g.remove_node(node_id)

    def remove_nodes(self, node_ids: Iterable[int]) -> None:
        self.g.remove_nodes_from(list(node_ids))

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
        """Drop nodes that neither an output nor the state the call leaves behind depends on
        (inputs included, so dead arguments vanish too): a write to a graph input is part of
        what the program does, and lives with everything it reads."""
        self._settle_rereads()
        live = set(self.outputs) | set(self.effects())
        for node in list(live):
            live |= nx.ancestors(self.g, node)
        self.g.remove_nodes_from([n for n in list(self.g) if n not in live])

    def _settle_rereads(self) -> None:
        """After an edit removed or replaced a write, a ``reread(view, w)`` whose ``w`` no longer
        writes the view's storage reads again after the last write that does and that it still
        depends on, or, with none newer than the view itself, is just the view."""
        for node_id in self.op_ids():
            node = self.node(node_id)
            if not ops.spec(node.op).renews:
                continue
            view, after = node.inputs
            root = self.root(view)
            if root in self.writes(after):
                continue
            state = State.of(self)
            chain = state.chains.get(root, []) if state is not None else []
            newer = [w for w in chain if w in state.ancestors[node_id]] \
                if state is not None and chain else []
            if state is not None and newer and newer[-1] != state.version(view):
                node.inputs = [view, newer[-1]]
                self.g.remove_edge(after, node_id)
                self.g.add_edge(newer[-1], node_id)
            else:
                self.replace_uses(node_id, view)
                self.g.remove_node(node_id)

    # ------------------------------------------------------------ state

    def alias_of(self, node_id: int) -> int | None:
        """The node whose storage ``node_id``'s value shares (a view's base, an in-place op's
        target), or None for a value of its own."""
        node = self.node(node_id)
        if node.is_input:
            return None
        at = ops.alias_of(node.op, node.attrs)
        return node.inputs[at] if at is not None and at < len(node.inputs) else None

    def root(self, node_id: int) -> int:
        """The node that made the storage ``node_id`` lives in."""
        while (base := self.alias_of(node_id)) is not None:
            node_id = base
        return node_id

    def writes(self, node_id: int) -> set[int]:
        """The storages (their roots) ``node_id`` writes in place."""
        node = self.node(node_id)
        if node.is_input:
            return set()
        return {self.root(node.inputs[i]) for i in ops.mutates(node.op, node.attrs)
                if i < len(node.inputs)}

    def rounded(self, node_id: int) -> bool:
        """Did an op round on the way to ``node_id``: is it, or anything it reads, a float some
        op computed that is not ``exact`` (an input's floats, and views and selections of them,
        hold their bits as given)?"""
        return any(not self.node(n).is_input and not ops.spec(self.node(n).op).exact
                   and self.node(n).dtype in ops.FLOAT_DTYPES
                   for n in nx.ancestors(self.g, node_id) | {node_id})

    def written_inputs(self) -> list[int]:
        """Graph inputs the program writes in place (arguments, buffers): their values after the
        call are part of what it computes, and judged."""
        written = set().union(*(self.writes(n) for n in self.op_ids())) if len(self) else set()
        return [n for n in self.input_ids() if n in written]

    def current(self, node_id: int) -> int:
        """``node_id`` as a node added now may read it: itself, or, where a write to its storage
        came after it, ``reread(node_id, last write)`` (added: the old alias read again)."""
        state = State.of(self)
        chain = state.chains.get(state.root[node_id], []) if state is not None else []
        if state is None or not chain or state.version(node_id) == chain[-1]:
            return node_id
        return self.add("reread", [node_id, chain[-1]])

    def effects(self) -> list[int]:
        """The last write to each written graph input: what keeps its writes alive."""
        state = State.of(self)
        if state is None:
            return []
        return [chain[-1] for root, chain in state.chains.items()
                if self.node(root).is_input and chain]

    def last_write(self, node_id: int) -> int | None:
        """The last write to ``node_id``'s storage (None: the program writes none): what a
        written input's state after the call is computed by."""
        state = State.of(self)
        chain = state.chains.get(state.root[node_id], []) if state is not None else []
        return chain[-1] if chain else None

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
            if any(o not in graph.g for o in graph.outputs) or \
                    not (graph.outputs or graph.written_inputs()):  # it returns or writes
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


# ---------------------------------------------------------------- state: versions and order
# A program may hold views that alias their base and writes through them. The IR stays one
# dataflow graph by three conventions, so that one graph has one meaning whatever the order its
# nodes were added in:
# - a write (an in-place op, ``x[i] = v``, an ``out=``) reads its target and stands for the
#   target after the write (``OpSpec.alias``/``mutates``); it renders as the statement itself;
# - a read of a storage after a write to it goes through a node that depends on that write: the
#   write itself, a view made after it, or ``reread(view, write)``, which renders as nothing
#   (the view's own name is read again: the code reads the old alias, which is the bug class);
# - every node therefore depends, through its data edges, on the last write to each storage it
#   reads (its *version*), and the writes to one storage form a chain. Statement order is then
#   derived: topological in the data edges plus one order edge from each read of a version to
#   the write that replaces it. A node's value is what it holds right after its statement, and
#   stays so until the next write to its storage, which no reader of it precedes.


class State:
    """The versions and statement order of a graph with writes (``State.of``: None without)."""

    def __init__(self, graph: Graph, writers: dict[int, set[int]]) -> None:
        self.graph = graph
        self.ancestors = _all_ancestors(graph.g)
        self.root = {n: graph.root(n) for n in graph.g}
        self.chains: dict[int, list[int]] = {}
        for writer, roots in writers.items():
            for root in roots:
                self.chains.setdefault(root, []).append(writer)
        for chain in self.chains.values():
            chain.sort(key=lambda w: (len(self.ancestors[w]), w))
        self._order: list[int] | None = None

    @classmethod
    def of(cls, graph: Graph) -> State | None:
        """The graph's state, derived once per structure: generation and shrinking ask for the
        order after every edit, and edits reach ``graph.g`` from outside, so the cache is keyed
        on what the state depends on (each node's op, inputs and captured aliasing) rather than
        invalidated by hand."""
        key = tuple((n, node.op, tuple(node.inputs), node.attrs.get("alias"),
                     str(node.attrs.get("mutates"))) for n, node in graph.g.nodes(data="node"))
        cached = getattr(graph, "_state", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        writers = {n: graph.writes(n) for n in graph.g if not graph.node(n).is_input}
        writers = {n: roots for n, roots in writers.items() if roots}
        state = cls(graph, writers) if writers else None
        graph._state = (key, state, None)  # (the key, the state, a stateless graph's order)
        return state

    def version(self, node: int, before: bool = False) -> int | None:
        """The last write to ``node``'s storage that ``node`` depends on (itself included unless
        ``before``): which version of the storage its value is; None for the storage as made."""
        chain = self.chains.get(self.root[node], [])
        seen = self.ancestors[node] if before else self.ancestors[node] | {node}
        found = [w for w in chain if w in seen]
        return found[-1] if found else None

    def check(self) -> None:
        """InvalidGraph unless every storage's writes form a chain, every node reads the version
        of each input's storage that it depends on (no read of a replaced version), every output
        is its storage's last version, and the order edges leave no cycle."""
        for root, chain in self.chains.items():
            for earlier, later in zip(chain, chain[1:]):
                if earlier not in self.ancestors[later]:
                    raise ops.InvalidGraph(f"writes {earlier} and {later} to the storage of node "
                                           f"{root} are not ordered by what they read")
        for node in self.graph.g:
            data = self.graph.node(node)
            renews = not data.is_input and ops.spec(data.op).renews
            for position, src in enumerate(data.inputs):
                chain = self.chains.get(self.root[src], [])
                if not chain or (renews and position == 0):  # an old alias, read again
                    continue
                seen = [w for w in chain if w in self.ancestors[node]]
                if seen and self.version(src) != seen[-1]:
                    raise ops.InvalidGraph(f"node {node} reads node {src} as it was before write "
                                           f"{seen[-1]}, which it also depends on")
        for out in self.graph.outputs:
            chain = self.chains.get(self.root[out], [])
            if chain and self.version(out) != chain[-1]:
                raise ops.InvalidGraph(f"output {out} is not the last version of its storage "
                                       f"(write {chain[-1]} comes after it)")
        self.order  # noqa: B018 - raises InvalidGraph on a cycle

    def order_edges(self) -> list[tuple[int, int]]:
        """(reader, write): every node reading a version of a storage comes before the write
        that replaces that version (a reader that is that write reads it itself)."""
        edges = []
        for node in self.graph.g:
            for src in self.graph.node(node).inputs:
                chain = self.chains.get(self.root[src], [])
                version = self.version(src)
                later = chain[chain.index(version) + 1:] if version in chain else chain
                if later and later[0] != node and later[0] not in self.ancestors[node] | {node}:
                    edges.append((node, later[0]))
        return edges

    @property
    def order(self) -> list[int]:
        if self._order is None:
            full = self.graph.g.copy()
            full.add_edges_from(self.order_edges())
            try:
                self._order = list(nx.lexicographical_topological_sort(full))
            except nx.NetworkXUnfeasible:
                raise ops.InvalidGraph("the program's reads and writes admit no order") from None
        return self._order


def _all_ancestors(g: nx.DiGraph) -> dict[int, set[int]]:
    """Every node's ancestors in one topological pass: a node's are its predecessors' and
    theirs. ``State`` needs them all, on every ``order()``; a search from each node (what
    ``nx.ancestors`` does) made that the generator's main cost."""
    ancestors: dict[int, set[int]] = {}
    for node in nx.topological_sort(g):
        found: set[int] = set()
        for pred in g.predecessors(node):
            found |= ancestors[pred]
            found.add(pred)
        ancestors[node] = found
    return ancestors


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
    """``gelu → e8m0`` for titles: the ops in canonical order, long chains elided; no
    ``reread`` (a view read again after a write: no call in torch)."""
    names = [graph.node(n).label for n in canonical_order(graph)
             if not graph.node(n).is_input and not ops.spec(graph.node(n).op).renews]
    if len(names) > limit:
        names = names[:limit // 2] + ["…"] + names[-(limit // 2):]
    return " → ".join(names)


def _plain(value: object) -> object:
    """Attrs as JSON-able values: tuples become lists (restored by ``_tuples``)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    raise ops.InvalidGraph(f"attribute value {value!r} is not plain data")


def _tuples(value: object) -> Any:
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value

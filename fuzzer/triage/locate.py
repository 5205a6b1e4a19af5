"""Where a divergence starts: the earliest op whose compiled value is already further from float64
than eager's, by the same rule as every verdict.

A compiled intermediate value does not exist inside a fused kernel, so it is measured by compiling
prefixes of the graph (``prefix``: the graph cut after an op, that op's value made the output) on
the case's own inputs, each in a fresh compile, and judging them like any case. The ops on the
way to the diverging output (its ancestors, in the order they run) are probed from the first on
when they are few, and bisected when they are many (``SCAN``); the answer is then confirmed: the
prefix ending at the located op diverges and the prefixes ending at each op it reads do not.
Where no prefix but the whole graph diverges, the divergence needs the whole graph (a fusion
across it), and ``Location`` says so instead of naming an op.

The nightly locates each minimized cause (``triage.signature.cause_of``): the kind the first
divergent op shows is the cause's mechanism (a zero of the wrong sign inside ``clamp`` seen
through ``copysign`` as a wrong sign of a value), which the known list and the value class read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import networkx as nx

from fuzzer.corpus.case import Case
from fuzzer.execute.pool import OutOfTime, TaskRunner
from fuzzer.execute.runner import Task
from fuzzer.ir.graph import Graph, canonical_order
from fuzzer.judge.oracle import Verdict

SCAN = 8  # ops on the path probed one by one from the first; past this, bisected
MAX_PROBES = 24


@dataclass
class Probe:
    """One prefix run: the op it ends at and what its value showed."""

    node: int
    label: str
    kind: str
    summary: str = ""

    @property
    def is_divergent(self) -> bool:
        return Verdict(self.kind).is_finding


@dataclass
class Location:
    """The first divergent op (``node``; None where none could be named), the kind its prefix
    shows, whether that was confirmed, and every probe made."""

    node: int | None
    label: str = ""
    kind: str = ""
    confirmed: bool = False
    note: str = ""
    probes: list[Probe] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"node": self.node, "label": self.label, "kind": self.kind,
                "confirmed": self.confirmed, "note": self.note,
                "probes": [p.__dict__ for p in self.probes]}

    @classmethod
    def from_dict(cls, data: dict | None) -> Location | None:
        if not data:
            return None
        return cls(**{**data, "probes": [Probe(**p) for p in data.get("probes", [])]})

    def summary(self) -> str:
        if self.node is None:
            return self.note or "not located"
        state = "confirmed" if self.confirmed else "not confirmed"
        return f"first diverges at {self.label} (node {self.node}, {self.kind}; {state})" + \
            (f": {self.note}" if self.note else "")


def prefix(graph: Graph, node: int) -> Graph:
    """The graph cut after ``node``: only what ``node`` needs, its value the one output."""
    cut = graph.copy()
    cut.outputs = [node]
    cut.remove_dead()
    return cut


def path(case: Case) -> list[int]:
    """The ops the diverging output depends on, in the order they run (the output last)."""
    graph, verdict = case.graph, case.verdict
    target = verdict.node if verdict is not None and verdict.node in graph.g else None
    ends = [target] if target is not None else list(graph.outputs)
    upstream = set(ends).union(*(nx.ancestors(graph.g, n) for n in ends))
    return [n for n in canonical_order(graph) if n in upstream and not graph.node(n).is_input]


def probe(case: Case, node: int, runner: TaskRunner) -> Probe:
    """The prefix ending at ``node``, on the case's inputs, in a fresh compile."""
    cut = prefix(case.graph, node)
    inputs = {str(n): case.inputs[str(n)] for n in cut.input_ids()}
    task = Task(graph=cut, draws=[inputs], device=case.device, recipe=case.recipe.fresh())
    verdict = runner.run(task).verdict
    return Probe(node, case.graph.node(node).label, str(verdict.kind), verdict.summary()[:300])


def locate(case: Case, runner: TaskRunner, stop: Callable[[], bool] | None = None,
           progress: Callable[[str], None] | None = None) -> Location:
    """The first divergent op of ``case`` (see the module docstring). ``stop`` is asked before
    each probe (OutOfTime when it says so)."""
    ops = path(case)
    probes: dict[int, Probe] = {}

    def divergent(index: int) -> bool:
        node = ops[index]
        if node not in probes:
            if stop is not None and stop():
                raise OutOfTime("the deadline came while locating")
            if len(probes) >= MAX_PROBES:
                raise _Spent
            probes[node] = probe(case, node, runner)
            if progress:
                found = probes[node]
                progress(f"{found.label} (node {node}): {found.kind}")
        return probes[node].is_divergent

    if not ops:
        return Location(None, note="the graph has no op to locate")
    try:
        first = _first(len(ops), divergent)
        location = _confirmed(case, ops, first, divergent, probes) if first is not None else \
            Location(None, note="no prefix diverges, the output's own one included: the "
                                "divergence needs the rest of the graph (another output's "
                                "work fused with it)")
    except _Spent:
        location = Location(None, note=f"not located within {MAX_PROBES} compiles")
    location.probes = [probes[n] for n in ops if n in probes]
    return location


class _Spent(Exception):
    """The probe budget ran out."""


def _first(count: int, diverges: Callable[[int], bool]) -> int | None:
    """The index of the first diverging prefix: one by one when few, else by bisection over
    prefixes (the last one must diverge for a bisection to start)."""
    if count <= SCAN:
        return next((i for i in range(count) if diverges(i)), None)
    if not diverges(count - 1):
        return None
    lo, hi = 0, count - 1  # hi diverges; find the first index that does
    while lo < hi:
        mid = (lo + hi) // 2
        if diverges(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _confirmed(case: Case, ops: list[int], first: int, diverges: Callable[[int], bool],
               probes: dict[int, Probe]) -> Location:
    """The op at ``first`` confirmed: its prefix diverges and those of the ops it reads do not
    (a bisection assumes a divergence, once there, stays; a later op may hide it)."""
    graph = case.graph
    node = ops[first]
    position = {n: i for i, n in enumerate(ops)}
    before = [position[i] for i in graph.node(node).inputs if i in position]
    clean = [i for i in before if not diverges(i)]
    kind = probes[node].kind
    if len(clean) == len(before):
        return Location(node, graph.node(node).label, kind, True)
    return Location(node, graph.node(node).label, kind, False,
                    note="an op it reads diverges too: the first divergence lies elsewhere on "
                         "another path (a later op hid it from the bisection)")


def mechanism(location: Location | None) -> dict:
    """What the known list and the value class read of a location: the first divergent op's
    label and the kind of divergence it shows there (``{}`` where not located)."""
    if location is None or location.node is None:
        return {}
    return {"op": location.label, "kind": location.kind, "confirmed": location.confirmed}

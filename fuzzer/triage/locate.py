"""Where a divergence starts: the earliest op whose compiled value is already further from float64
than eager's, by the same rule as every verdict.

A compiled intermediate value does not exist inside a fused kernel, so it is measured by compiling
prefixes of the graph (``prefix``: the graph cut after an op, that op's value made the output) on
the case's own inputs and judging them like any case. The ops on the way to the diverging output
(its ancestors, in the order they run: ``path``) are probed from the first on when they are few,
and bisected when they are many (``SCAN``); the answer is then confirmed: the prefix ending at the
located op diverges and the prefixes ending at each op it reads do not. Where no prefix but the
whole graph diverges, the divergence needs the whole graph (a fusion across it), and
``Location`` says so instead of naming an op. Each probe records eager's and compiled's error
against float64 at its op, in ulps of that value's dtype (``error_ulps``), and, for a captured
model file, the user's own file, line, source text and submodule (``Case.origin["sources"]``).

The nightly locates each minimized cause (``triage.signature.cause_of``): the kind the first
divergent op shows is the cause's mechanism (a zero of the wrong sign inside ``clamp`` seen
through ``copysign`` as a wrong sign of a value), which the known list and the value class read.
``numfuzz locate`` answers a model owner's question with it: which line of my model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

from fuzzer.corpus.case import Case
from fuzzer.execute.pool import OutOfTime, TaskRunner
from fuzzer.execute.task import Task
from fuzzer.ir.graph import Graph, canonical_order
from fuzzer.judge import rules
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import Verdict

SCAN = 8  # ops on the path probed one by one from the first; past this, bisected
MAX_PROBES = 40


@dataclass
class Probe:
    """One prefix run: the op it ends at, what its value showed, eager's and compiled's largest
    error against float64 there (ulps of its dtype; None where not measured, or not a float),
    and where the user's code made it (empty for a generated graph)."""

    node: int
    label: str
    kind: str
    summary: str = ""
    eager_ulps: float | None = None
    compiled_ulps: float | None = None
    source: dict = field(default_factory=dict)

    @property
    def is_divergent(self) -> bool:
        return Verdict(Kind(self.kind)).is_finding


@dataclass
class Location:
    """The first divergent op (``node``; None where none could be named), the kind its prefix
    shows, whether that was confirmed, and every probe made (in path order)."""

    node: int | None
    label: str = ""
    kind: str = ""
    confirmed: bool = False
    note: str = ""
    probes: list[Probe] = field(default_factory=list)
    path: list[int] = field(default_factory=list)  # every op on the way to the output

    def to_dict(self) -> dict:
        return {**asdict(self), "probes": [asdict(p) for p in self.probes]}

    @classmethod
    def from_dict(cls, data: dict | None) -> Location | None:
        if not data:
            return None
        return cls(**{**data, "probes": [Probe(**p) for p in data.get("probes", [])]})

    @property
    def found(self) -> Probe | None:
        return next((p for p in self.probes if p.node == self.node), None)

    def summary(self) -> str:
        if self.node is None:
            return self.note or "not located"
        state = "confirmed" if self.confirmed else "not confirmed"
        where = self.found.source if self.found is not None else {}
        at = f" at {where['file']}:{where['line']}" if where.get("line") else ""
        return f"first diverges at {self.label} (node {self.node}{at}, {self.kind}; {state})" + \
            (f": {self.note}" if self.note else "")


def prefix(graph: Graph, node: int) -> Graph:
    """The graph cut after ``node``: only what ``node`` needs, its value the one output."""
    cut = graph.copy()
    cut.outputs = [node]
    cut.remove_dead()
    return cut


def prefix_case(case: Case, node: int) -> Case:
    """The case cut after ``node`` (``prefix``), on the case's own inputs and recipe."""
    cut = prefix(case.graph, node)
    return Case(graph=cut, inputs={str(n): case.inputs[str(n)] for n in cut.input_ids()},
                device=case.device, dtype=case.dtype, recipe=case.recipe,
                origin={k: v for k, v in case.origin.items() if k in ("model_file", "sources")})


def path(case: Case) -> list[int]:
    """The ops the diverging output depends on, in the order they run (the output last)."""
    graph, verdict = case.graph, case.verdict
    target = verdict.node if verdict is not None and verdict.node in graph else None
    ends = [target] if target is not None else list(graph.outputs)
    upstream = set(ends).union(*(graph.ancestors(n) for n in ends))
    return [n for n in canonical_order(graph) if n in upstream and not graph.node(n).is_input]


def error_ulps(value: torch.Tensor, ref: torch.Tensor) -> float | None:
    """The largest error of ``value`` against float64's ``ref``, in ulps of ``value``'s dtype
    at ``ref``'s magnitude, over the elements where both are finite; None for a value that is
    not a float, or has no such element; inf where it is non-finite and float64 is not."""
    if not value.is_floating_point() or value.shape != ref.shape or not value.numel():
        return None
    v, r = value.detach().cpu().double(), ref.detach().cpu().double()
    reference = torch.isfinite(r)
    if bool((reference & ~torch.isfinite(v)).any()):
        return math.inf  # non-finite where float64 is finite: no number of ulps says it
    finite = reference & torch.isfinite(v)
    if not bool(finite.any()):
        return None
    ulps = (v - r).abs()[finite] / rules.spacing(r[finite], value.dtype)
    return float(ulps.max())


def probe(case: Case, node: int, runner: TaskRunner, fresh: bool = False) -> Probe:
    """The prefix ending at ``node``, on the case's inputs (in a fresh compile if ``fresh``),
    with eager's and compiled's error against float64 at ``node``."""
    cut = prefix_case(case, node)
    recipe = case.recipe.fresh() if fresh else case.recipe
    task = Task(graph=cut.graph, draws=[cut.inputs], device=case.device, recipe=recipe,
                keep_outputs=True)
    result = runner.run(task)
    verdict, outputs = result.verdict, result.outputs
    errors: list[float | None] = [None, None]
    if outputs.get("fp64"):
        ref = outputs["fp64"][0]
        errors = [error_ulps(outputs[side][0], ref) if outputs.get(side) else None
                  for side in ("eager", "compiled")]
    eager_ulps, compiled_ulps = errors
    return Probe(node, case.graph.node(node).label, str(verdict.kind), verdict.summary()[:300],
                 eager_ulps, compiled_ulps,
                 source=dict(case.origin.get("sources", {}).get(str(node), {})))


def locate(case: Case, runner: TaskRunner, stop: Callable[[], bool] | None = None,
           progress: Callable[[str], None] | None = None, fresh: bool = True,
           every: bool = False) -> Location:
    """The first divergent op of ``case`` (see the module docstring). ``stop`` is asked before
    each probe (OutOfTime when it says so); ``fresh`` compiles each prefix with no cache hit;
    ``every`` probes every op of the path, so each has its errors."""
    ops = path(case)
    probes: dict[int, Probe] = {}

    def divergent(index: int) -> bool:
        node = ops[index]
        if node not in probes:
            if stop is not None and stop():
                raise OutOfTime("the deadline came while locating")
            if len(probes) >= MAX_PROBES:
                raise _Spent
            probes[node] = probe(case, node, runner, fresh)
            if progress:
                found = probes[node]
                progress(f"probe {len(probes)}: {found.label} (node {node}, op "
                         f"{index + 1}/{len(ops)}): {found.kind}")
        return probes[node].is_divergent

    if not ops:
        return Location(None, note="the graph has no op to locate")
    try:
        first = _first(len(ops), divergent, every)
        location = _confirmed(case, ops, first, divergent, probes) if first is not None else \
            Location(None, note="no prefix diverges, the output's own one included: the "
                                "divergence needs the rest of the graph (another output's "
                                "work fused with it)")
    except _Spent:
        location = Location(None, note=f"not located within {MAX_PROBES} compiles")
    location.probes = [probes[n] for n in ops if n in probes]
    location.path = ops
    return location


class _Spent(Exception):
    """The probe budget ran out."""


def _first(count: int, divergent: Callable[[int], bool], every: bool = False) -> int | None:
    """The index of the first diverging prefix: one by one when few (or ``every``), else by
    bisection over prefixes (the last one must diverge for a bisection to start)."""
    if count <= SCAN or every:
        found = [i for i in range(count) if divergent(i)] if every else \
            [next((i for i in range(count) if divergent(i)), None)]
        return found[0] if found and found[0] is not None else None
    if not divergent(count - 1):
        return None
    lo, hi = 0, count - 1  # hi diverges; find the first index that does
    while lo < hi:
        mid = (lo + hi) // 2
        if divergent(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _confirmed(case: Case, ops: list[int], first: int, divergent: Callable[[int], bool],
               probes: dict[int, Probe]) -> Location:
    """The op at ``first`` confirmed: its prefix diverges and those of the ops it reads do not
    (a bisection assumes a divergence, once there, stays; a later op may hide it)."""
    graph = case.graph
    node = ops[first]
    position = {n: i for i, n in enumerate(ops)}
    before = [position[i] for i in graph.node(node).inputs if i in position]
    clean = [i for i in before if not divergent(i)]
    kind = probes[node].kind
    if len(clean) == len(before):
        return Location(node, graph.node(node).label, kind, True)
    return Location(node, graph.node(node).label, kind, False,
                    note="an op it reads diverges too: the first divergence lies elsewhere on "
                         "another path (a later op hid it from the bisection)")

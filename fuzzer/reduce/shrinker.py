"""The shrinker: a case made smaller, pass by pass, through one door, judged by any predicate.

``Shrinker(case, test)`` knows nothing of workers or compilers: ``test`` says whether a candidate
still shows what matters (``reduce.minimize`` wires it to a worker and the divergence key; a unit
test may pass a plain Python function). Every candidate goes through one chokepoint,
``Shrinker.consider``: it must be smaller than the best so far in the total order
(``size.size_key``) and new (a cache keyed by the case's canonical hash), and it is adopted when
``test`` accepts it. Before ``test`` sees a candidate, its ``verdict`` names the divergence it
must show: the shrinker's target, or, for a pass that made an earlier node the output, the same
divergence on that node (``judge.key.moved``), which becomes the target once adopted.
The passes are small methods named for what they do, each opening its docstring with the
failure it targets; they run to a fixpoint, big cuts first, and a pass that made progress moves
to the front. ``consider`` stops the run (``BudgetExhausted``) on a call
budget, a time budget, or a stall: ``stall`` calls in a row that adopted nothing, as Hypothesis's
shrinker gives up on a plateau. Calls and adoptions are counted per pass (``PassStats``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from enum import StrEnum

import torch

from fuzzer import clock
from fuzzer.corpus.case import Case
from fuzzer.gen import domains
from fuzzer.ir import generic, ops, render
from fuzzer.ir.graph import Graph
from fuzzer.judge import rules
from fuzzer.judge.key import moved, shows_on
from fuzzer.judge.verdict import Verdict
from fuzzer.reduce.size import elements, size_key

STALL = 200  # calls in a row without an adoption before the shrinker gives up


class Budget(StrEnum):
    """Which budget stopped a shrinker before its fixpoint."""

    CALLS = "calls"
    TIME = "time"
    STALL = "stall"


@dataclass(frozen=True)
class Stop:
    """Why a shrinker stopped short of its fixpoint: the budget, and its limit (calls)."""

    budget: Budget
    limit: int | None = None

    def __str__(self) -> str:
        return {Budget.CALLS: f"--max-calls {self.limit} reached",
                Budget.TIME: "time budget reached",
                Budget.STALL: f"stalled: {self.limit} calls in a row adopted nothing"
                }[self.budget]


class BudgetExhausted(Exception):
    """A budget ran out (calls, time or a stall): the best case so far is the result."""


@dataclass
class PassStats:
    """What one pass cost and gained: predicate calls it made, candidates it had adopted."""

    calls: int = 0
    adopted: int = 0


def eager_values(case: Case) -> dict[int, torch.Tensor]:
    """Every node's eager value on the case's device: the material for cutting a graph (on
    copies of the inputs: a program may write them)."""
    trace = render.load(render.render_trace(case.graph), "trace")
    args = [rules.fresh(t).to(case.device) for t in case.ordered_inputs()]
    with torch.no_grad():
        return {n: v.detach().cpu() for n, v in trace(*args).items()}


def derive(case: Case, graph: Graph, inputs: dict[str, torch.Tensor]) -> Case | None:
    """A candidate: the same case with another graph and inputs; None if the graph is invalid."""
    try:  # an edit may leave reads and writes that no order satisfies: no candidate
        graph.remove_dead()
        if not (graph.outputs or graph.written_inputs()):  # computes nothing any more
            return None
        graph.infer()
    except ops.InvalidGraph:
        return None
    kept = {str(n): inputs[str(n)] for n in graph.input_ids()}
    return replace(case, graph=graph, inputs=kept, verdict=None, versions=dict(case.versions),
                   origin=dict(case.origin))


class Shrinker:
    """Holds the best case so far and the one door every candidate passes through.

    ``test(candidate)`` is the predicate: True when the candidate still shows what the original
    case showed; the candidate's ``verdict`` says what that is (the target, moved to another
    output node by ``output_earlier_node``). It may record what it saw on the candidate (its
    verdict, which the slicing pass reads). ``values(case)`` gives every node's value, for
    cutting the graph there (default: eager, in this process). The case's verdict names the
    output the shrinker protects."""

    def __init__(self, case: Case, test: Callable[[Case], bool], *, max_calls: int = 400,
                 seconds: float | None = None, stall: int | None = STALL,
                 values: Callable[[Case], dict[int, torch.Tensor]] = eager_values,
                 progress: Callable[[str], None] | None = None) -> None:
        self.test, self.node_values = test, values
        self.max_calls, self.seconds, self.stall = max_calls, seconds, stall
        self.progress = progress or (lambda text: None)
        self.target = case.verdict
        self.best = case
        self.cache: dict[str, bool] = {}
        self.calls = self.hits = 0
        self.last_adopted = 0  # self.calls at the last adoption
        self.ops_settled_at = 0  # self.calls when the op count last dropped
        self.stats: dict[str, PassStats] = {}
        self.current = "start"  # the pass running now, charged for the calls
        self.fixpoint = False  # every pass ran once more and none made progress
        self.stopped: Stop | None = None  # the budget that stopped it, if one did
        self.start = clock.now()
        self._values: tuple[str, dict[int, torch.Tensor]] | None = None

    # ------------------------------------------------------------ the chokepoint

    def consider(self, candidate: Case | None, target: Verdict | None = None) -> bool:
        """Is ``candidate`` new, smaller than the best in ``size_key`` and interesting? Adopts it
        as the new best when it is. ``target``: the divergence it must show when not the
        shrinker's own (its output moved), the new target once adopted.

        A candidate seen before never counts as progress, even if it was interesting then: it was
        adopted and has since been improved on. That is what makes the fixpoint loop terminate.
        """
        if candidate is None or size_key(candidate) >= size_key(self.best):
            return False
        key = candidate.digest()
        if key in self.cache:
            self.hits += 1
            return False
        self._check_budget()
        self.calls += 1
        stats = self.stats.setdefault(self.current, PassStats())
        stats.calls += 1
        candidate.verdict = target or self.target  # what it must show; the test may overwrite it
        interesting = bool(self.test(candidate))
        self.cache[key] = interesting
        if interesting:
            if len(candidate.graph) < len(self.best.graph):
                self.ops_settled_at = self.calls
            self.best, self.last_adopted = candidate, self.calls
            self.target = target or self.target
            stats.adopted += 1
        return interesting

    def _check_budget(self) -> None:
        if self.calls >= self.max_calls:
            self._stop(Stop(Budget.CALLS, self.max_calls))
        if self.seconds is not None and clock.now() - self.start > self.seconds:
            self._stop(Stop(Budget.TIME))
        if self.stall is not None and self.calls - self.last_adopted >= self.stall:
            self._stop(Stop(Budget.STALL, self.stall))

    def _stop(self, why: Stop) -> None:
        self.stopped = why
        raise BudgetExhausted(str(why))

    def values(self) -> dict[int, torch.Tensor]:
        key = self.best.digest()
        if self._values is None or self._values[0] != key:
            self._values = (key, self.node_values(self.best))
        return self._values[1]

    # ------------------------------------------------------------ passes

    def drop_other_outputs(self) -> bool:
        """Outputs other than the diverging one keep their whole subgraphs alive. A diverging
        gradient (training) is of an input, and the outputs it flows back from are not known:
        they are dropped ddmin-style, as many as keep it; so are all of them where the
        divergence is in the state the program leaves in an input."""
        outputs = self.best.graph.outputs
        state = self.target is not None and self.target.diverging is not None and \
            self.target.diverging.details.state_of is not None  # may keep no output at all
        if not outputs or (len(outputs) == 1 and not state) or self.target is None:
            return False
        if self.target.node in outputs:
            graph = self.best.graph.copy()
            graph.outputs = [self.target.node]
            return self.consider(derive(self.best, graph, self.best.inputs))
        return self._ddmin(list(outputs), self._without_outputs)

    def _without_outputs(self, dropped: list[int]) -> Case | None:
        graph = self.best.graph.copy()
        graph.outputs = [o for o in graph.outputs if o not in dropped]
        # A program that writes its inputs may return nothing: its state is what it computes.
        return derive(self.best, graph, self.best.inputs) \
            if graph.outputs or graph.written_inputs() else None

    def output_earlier_node(self) -> bool:
        """A divergence that starts upstream hides behind the ops after it (a softmax that
        overflows to NaN, then an add): make an earlier node the output where it shows the same
        kind of divergence. Tried smallest subgraph first; the first that shows it is kept."""
        graph, target = self.best.graph, self.target
        if target is None or target.node is None or target.node not in graph \
                or _is_gradient(target):
            return False
        kind = target.diverging.kind if target.diverging is not None else target.kind
        earlier = [n for n in graph.ancestors(target.node)
                   if not graph.node(n).is_input and n not in graph.outputs
                   and shows_on(kind, graph.node(n).dtype)]
        earlier.sort(key=lambda n: (len(graph.ancestors(n)), n))
        for n in earlier:
            moved_graph = graph.copy()
            moved_graph.outputs = [n if o == target.node else o for o in graph.outputs]
            candidate = derive(self.best, moved_graph, self.best.inputs)
            if self.consider(candidate, moved(target, n, graph.node(n).dtype)):
                return True
        return False

    def cut_to_eager_values(self) -> bool:
        """A long upstream chain hides a short cause: replace nodes by their eager values.

        Nodes nearest the output go first, since a cut there removes the most; chunks halve
        ddmin-style. A cut node becomes a graph input holding exactly what eager computed, so the
        diverging op still sees the same numbers.
        """
        nodes = self._cuttable()
        return self._ddmin(nodes, self._cut)

    def _cuttable(self) -> list[int]:
        graph = self.best.graph
        protected = set(graph.outputs)
        order = [n for n in graph.op_ids() if n not in protected]
        return list(reversed(order))

    def _cut(self, nodes: list[int]) -> Case | None:
        values = self.values()
        graph = self.best.graph.copy()
        inputs = dict(self.best.inputs)
        for n in nodes:
            if n not in graph:
                continue
            node = graph.node(n)
            new = graph.add("input", [], shape=node.shape, dtype=node.dtype, role="x")
            inputs[str(new)] = values[n].clone()
            graph.replace_uses(n, new)
        return derive(self.best, graph, inputs)

    def drop_writes(self) -> bool:
        """A write that changes nothing the divergence needs keeps a view chain and its operands
        alive: remove it, readers of what it wrote reading its target as it was before, and
        with it what only it fed. No read of a version that no longer exists is left: the
        candidate is checked like every graph (``ir.graph.State``)."""
        graph = self.best.graph
        writes = [n for n in reversed(graph.op_ids())
                  if ops.is_statement(graph.node(n).op, graph.node(n).attrs) and graph.writes(n)]
        return self._ddmin(writes, self._without_writes)

    def _without_writes(self, nodes: list[int]) -> Case | None:
        graph = self.best.graph.copy()
        for n in nodes:
            if n in graph:
                node = graph.node(n)
                graph.replace_uses(n, node.inputs[ops.alias_of(node.op, node.attrs) or 0])
                graph.remove_node(n)
        return derive(self.best, graph, self.best.inputs)

    def unpass_views(self) -> bool:
        """A view the caller passes beside its input (arguments sharing storage) that the
        divergence does not need as an argument of its own: make it inside the function, so
        the repro is one function and says the aliased arguments are not the cause."""
        return self._ddmin(self.best.graph.passed_views(), self._unpassed)

    def _unpassed(self, nodes: list[int]) -> Case | None:
        graph = self.best.graph.copy()
        for n in nodes:
            graph.node(n).attrs.pop("passed", None)
        return derive(self.best, graph, self.best.inputs)

    def bypass_nodes(self) -> bool:
        """An op that only passes its input along (activation, norm, cast) adds nothing."""
        graph = self.best.graph
        nodes = [n for n in reversed(graph.op_ids()) if n not in graph.outputs
                 and self._bypass_source(graph, n) is not None]
        return self._ddmin(nodes, self._bypass)

    @staticmethod
    def _bypass_source(graph: Graph, n: int, depth: int = 3) -> int | None:
        """A value that can stand in for node ``n``: one of its inputs with the same shape and
        dtype, or such a value up to ``depth`` single-input hops back (so a reshape/transpose pair
        that only round-trips a layout can go as a unit)."""
        node = graph.node(n)
        frontier = list(node.inputs)
        for _ in range(depth):
            for src in frontier:
                s = graph.node(src)
                if s.shape == node.shape and s.dtype == node.dtype:
                    return src
            frontier = [graph.node(f).inputs[0] for f in frontier
                        if len(graph.node(f).inputs) == 1]
        return None

    def _bypass(self, nodes: list[int]) -> Case | None:
        graph = self.best.graph.copy()
        for n in nodes:
            if n in graph:
                src = self._bypass_source(graph, n)
                if src is not None:
                    graph.replace_uses(n, src)
        return derive(self.best, graph, self.best.inputs)

    def slice_to_diverging_elements(self) -> bool:
        """Most elements are bystanders: in an elementwise graph keep only the diverging ones.

        Tries the first diverging element alone, then blocks of 8…256 around it, because a
        vectorized loop and its scalar tail may compute differently.
        """
        graph = self.best.graph
        if self.target is None or self.target.node is None or self.target.node not in graph:
            return False
        target = graph.node(self.target.node)
        if not all(ops.spec(graph.node(n).op).elementwise for n in graph.op_ids()):
            return False
        shape = target.shape
        numel = math.prod(shape)
        if numel <= 1 or any(self.best.inputs[str(i)].shape not in (shape, ())
                             and self.best.inputs[str(i)].numel() != 1
                             for i in graph.input_ids()):
            return False
        flat = self._diverging_flat_index(shape)
        if flat is None:
            return False
        for size in (1, 8, 16, 32, 64, 256):
            if size >= numel:
                break
            lo = max(0, min(flat - flat % size, numel - size))
            if self.consider(self._slice_flat(lo, lo + size)):
                return True
        return False

    def _diverging_flat_index(self, shape: tuple[int, ...]) -> int | None:
        out = self.best.verdict.diverging if self.best.verdict else None
        elements = out.details.elements if out else None
        if not elements:
            return None
        index = elements[0].index
        flat = 0
        for i, s in zip(index, shape):
            flat = flat * s + i
        return flat

    def _slice_flat(self, lo: int, hi: int) -> Case | None:
        graph = self.best.graph.copy()
        inputs = {}
        for n in graph.input_ids():
            t = self.best.inputs[str(n)]
            if t.numel() != 1:
                t = t.reshape(-1)[lo:hi].clone()
                graph.node(n).shape = tuple(t.shape)
            inputs[str(n)] = t
        return derive(self.best, graph, inputs)

    def halve_dimensions(self) -> bool:
        """Big tensors make slow, unreadable repros: halve dims shared by the inputs.

        Inputs whose dim d has the same size are sliced together (a batch or channel dim runs
        through them all); slices the shape rules reject cost no oracle call.
        """
        for dim, size in self._shared_dims():
            for lo, hi in ((0, size // 2), (size // 2, size), (0, 1)):
                if hi - lo >= 1 and self.consider(self._slice_dim(dim, size, lo, hi)):
                    return True
        return False

    def _shared_dims(self) -> list[tuple[int, int]]:
        seen: dict[tuple[int, int], int] = {}
        for t in self.best.inputs.values():
            for d, s in enumerate(t.shape):
                if s > 1:
                    seen[(d - t.dim(), s)] = seen.get((d - t.dim(), s), 0) + 1
        return sorted(seen, key=lambda key: (-key[1], key[0]))

    def _slice_dim(self, dim: int, size: int, lo: int, hi: int) -> Case | None:
        graph = self.best.graph.copy()
        inputs = {}
        for n in graph.input_ids():
            t = self.best.inputs[str(n)]
            if t.dim() >= -dim and t.shape[dim] == size:
                t = t.narrow(dim, lo, hi - lo).clone()
                graph.node(n).shape = tuple(t.shape)
            inputs[str(n)] = t
        return derive(self.best, graph, inputs)

    def widen_to_float32(self) -> bool:
        """A half-precision repro hides whether precision matters: try the same in float32."""
        if self.best.dtype == "float32" or self._has_casts():
            return False
        graph = self.best.graph.copy()
        inputs = {}
        for n in graph.input_ids():
            t = self.best.inputs[str(n)]
            if t.is_floating_point() and t.dtype != torch.float32:
                t = t.float()
                graph.node(n).dtype = "float32"
            inputs[str(n)] = t
        candidate = derive(self.best, graph, inputs)
        if candidate is not None:
            candidate.dtype = "float32"
        return self.consider(candidate)

    def _has_casts(self) -> bool:
        graph = self.best.graph
        nodes = [graph.node(n) for n in graph.op_ids()]
        return any(node.op == "cast_roundtrip"
                   or (node.op == "call" and generic.casts_dtype(node.attrs))
                   for node in nodes)

    def simplify_constants(self) -> bool:
        """Constants like 12345.678 distract the reader: try round numbers that still diverge."""
        progress = False
        for n in self.best.graph.op_ids():
            node = self.best.graph.node(n) if n in self.best.graph else None
            if node is None:
                continue
            for key, value in node.attrs.items():
                if isinstance(value, float) and not isinstance(value, bool):
                    for simpler in _simpler_floats(value):
                        graph = self.best.graph.copy()
                        graph.node(n).attrs[key] = simpler
                        if self.consider(derive(self.best, graph, self.best.inputs)):
                            progress = True
                            break
        return progress

    def simplify_inputs(self) -> bool:
        """Long mantissas make repros unreadable: zero weights, or round inputs to fewer bits."""
        progress = False
        for n in self.best.graph.input_ids():
            key = str(n)
            t = self.best.inputs.get(key)
            if t is None or not t.is_floating_point():
                continue
            for simpler in _simpler_tensors(t):
                if torch.equal(simpler, t):
                    continue
                inputs = {**self.best.inputs, key: simpler}
                if self.consider(derive(self.best, self.best.graph.copy(), inputs)):
                    progress = True
                    break
        return progress

    def tame_edge_values(self) -> bool:
        """Reports built on inf, NaN, values near the dtype's largest or subnormals are closed as
        edge cases: try ordinary values in their place (a unit, then a thousand, of each
        element's sign; zero), one input at a time, so a cause that does not need them is not
        drafted as if it did (``triage.value``)."""
        progress = False
        for n in self.best.graph.input_ids():
            key = str(n)
            t = self.best.inputs.get(key)
            if t is None or not t.is_floating_point() or t.numel() == 0:
                continue
            edge = domains.edge_mask(t)
            if not bool(edge.any()):
                continue
            sign = torch.where(torch.signbit(t), -1.0, 1.0).to(t.dtype)
            for ordinary in (sign, sign * 1024, torch.zeros_like(t)):
                tamed = rules.fresh(t)
                tamed.copy_(torch.where(edge, ordinary, t))  # its layout kept
                if self.consider(derive(self.best, self.best.graph.copy(),
                                        {**self.best.inputs, key: tamed})):
                    progress = True
                    break
        return progress

    # ------------------------------------------------------------ driver

    def _ddmin(self, items: list[int], make: Callable[[list[int]], Case | None]) -> bool:
        """Try removing chunks of ``items``, largest first, halving the chunk size on failure."""
        progress = False
        chunk = max(1, len(items))
        while items and chunk >= 1:
            i, changed = 0, False
            while i < len(items):
                part = items[i:i + chunk]
                if self.consider(make(part)):
                    progress = changed = True
                    live = set(self.best.graph.node_ids())
                    items = [n for n in items if n in live and n not in part]
                else:
                    i += chunk
            if not changed:
                if chunk == 1:
                    break
                chunk = max(1, chunk // 2)
        return progress

    def passes(self) -> list[Callable[[], bool]]:
        return [self.drop_other_outputs, self.output_earlier_node, self.cut_to_eager_values,
                self.drop_writes, self.unpass_views, self.bypass_nodes,
                self.slice_to_diverging_elements, self.halve_dimensions, self.widen_to_float32,
                self.tame_edge_values, self.simplify_constants, self.simplify_inputs]

    def shrink(self) -> Case:
        """Run passes to a fixpoint (or until a budget stops it: ``BudgetExhausted``); a pass
        that made progress moves to the front. Returns the best case."""
        passes = self.passes()
        while True:
            for p in passes:
                self.current = p.__name__
                if p():
                    self.progress(f"{p.__name__}: now {len(self.best.graph)} ops, "
                                  f"{elements(self.best)} input elements ({self.calls} calls)")
                    passes.remove(p)
                    passes.insert(0, p)
                    break
            else:
                self.fixpoint = True
                return self.best


def _is_gradient(verdict: Verdict) -> bool:
    """A diverging gradient names the input it is taken for, not an output to move."""
    out = verdict.diverging
    return out is not None and out.details.gradient_of is not None


def _complexity(value: float) -> tuple[int, float]:
    return len(repr(abs(value))), abs(value)


def _simpler_floats(value: float) -> Iterator[float]:
    """Strictly simpler constants only (shorter to write, then smaller), so passes cannot cycle.
    An infinity or NaN (``fill_(inf)``) is no long constant to read: it is kept."""
    if not math.isfinite(value):
        return
    seen = {value}
    for candidate in (1.0, 0.5, 2.0, float(round(value)), _round_sig(value, 1),
                      _round_sig(value, 2)):
        candidate = math.copysign(candidate, value)
        if candidate not in seen and candidate != 0.0 and \
                _complexity(candidate) < _complexity(value):
            seen.add(candidate)
            yield candidate


def _round_sig(value: float, digits: int) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))


def _simpler_tensors(t: torch.Tensor) -> Iterator[torch.Tensor]:
    wide = t.double()
    if t.numel() > 1 and not bool((wide == wide.reshape(-1)[0]).all()):
        yield torch.zeros_like(t)
        yield torch.ones_like(t)
    for bits in (4, 8):
        mantissa, exponent = torch.frexp(wide)
        rounded = torch.ldexp(torch.round(mantissa * 2**bits) / 2**bits, exponent)
        yield torch.where(torch.isfinite(wide), rounded, wide).to(t.dtype)

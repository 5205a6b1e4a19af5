"""The minimizer: shrink a diverging case to the smallest graph and inputs that diverge alike.

Every candidate goes through one chokepoint, ``Shrinker.test``, which caches verdicts by the case's
canonical hash and enforces the budget. A candidate is interesting only if it shows the same
divergence (``fuzzer.judge.key``: kind, evidence class and output node, so a strong flip never
shrinks into a weak one), and it is adopted only if it is smaller in one total order,
``size_key``: ops, then input elements, then the digits its constants and inputs take to write,
then a float32 over a half-precision case. One that diverges differently is a slip, saved to the
corpus as a new finding and not followed. Passes are small methods named for what they do, each
opening its docstring with the failure it targets; they run to a fixpoint, big cuts first, and a
pass that made progress moves to the front. The k/k checks before and after compile afresh, with
Inductor's caches off, so a cached kernel cannot stand in for the compiler.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from fuzzer.corpus.case import Case, CaseError
from fuzzer.corpus.replay import task_for
from fuzzer.execute.workers import Runner
from fuzzer.ir import generic, ops, render
from fuzzer.ir.graph import Graph
from fuzzer.judge.key import focus, same_divergence
from fuzzer.judge.oracle import Verdict

ELEMENTWISE = ("elementwise", "binary", "head")


class NotReproducible(CaseError):
    """The case does not diverge k times out of k (flaky, nondeterministic, or gone)."""


class BudgetExhausted(Exception):
    pass


@dataclass
class MinimizeResult:
    case: Case
    original_ops: int
    final_ops: int
    original_elements: int
    final_elements: int
    calls: int
    cache_hits: int
    seconds: float
    reliability: tuple[int, int]
    slips: list[Path] = field(default_factory=list)
    passes: dict[str, int] = field(default_factory=dict)  # successes per pass
    calls_to_final_ops: int = 0  # oracle calls until the op count last dropped (graph-only work)

    def table(self) -> list[tuple[str, str, str]]:
        return [
            ("ops", str(self.original_ops), str(self.final_ops)),
            ("input elements", str(self.original_elements), str(self.final_elements)),
            ("oracle calls", "", str(self.calls)),
            ("calls until the op count settled", "", str(self.calls_to_final_ops)),
            ("cache hits", "", str(self.cache_hits)),
            ("wall time", "", f"{self.seconds:.1f}s"),
            ("reliability", "", f"{self.reliability[0]}/{self.reliability[1]}"),
            ("slips saved", "", str(len(self.slips))),
        ]


def elements(case: Case) -> int:
    return sum(t.numel() for t in case.inputs.values())


def size_key(case: Case) -> tuple[int, int, int, int]:
    """The total order candidates must descend: ops, input elements, constant digits, and a
    float32 case before a half-precision one."""
    return (len(case.graph), elements(case), constant_digits(case), int(case.dtype != "float32"))


def constant_digits(case: Case) -> int:
    """How much there is to read in the constants: characters of every float attribute, plus the
    mantissa bits every float input element needs (0 for zeros and powers of two)."""
    graph = case.graph
    chars = sum(len(repr(v)) for n in graph.op_ids() for v in graph.node(n)["attrs"].values()
                if isinstance(v, float))
    return chars + sum(mantissa_bits(t) for t in case.inputs.values() if t.is_floating_point())


def mantissa_bits(t: torch.Tensor) -> int:
    """Total significant bits after the leading one, over the finite elements of ``t``."""
    mantissa, _ = torch.frexp(t.double()[torch.isfinite(t)])
    bits = torch.zeros_like(mantissa, dtype=torch.long)
    scaled = mantissa.abs() * 2  # in [1, 2): the leading one is free
    for _ in range(53):
        frac = scaled - scaled.floor()
        more = frac != 0
        if not bool(more.any()):
            break
        bits += more.long()
        scaled = torch.where(more, scaled * 2, scaled)
    return int(bits.sum())


def eager_values(case: Case) -> dict[int, torch.Tensor]:
    """Every node's eager value on the case's device: the material for cutting a graph."""
    trace = render.load(render.render_trace(case.graph), "trace")
    args = [t.to(case.device) for t in case.ordered_inputs()]
    with torch.no_grad():
        return {n: v.detach().cpu() for n, v in trace(*args).items()}


def derive(case: Case, graph: Graph, inputs: dict[str, torch.Tensor]) -> Case | None:
    """A candidate: the same case with another graph and inputs; None if the graph is invalid."""
    graph.remove_dead()
    try:
        graph.infer()
    except ops.InvalidGraph:
        return None
    kept = {str(n): inputs[str(n)] for n in graph.input_ids()}
    return replace(case, graph=graph, inputs=kept, config=dict(case.config), verdict=None,
                   versions=dict(case.versions), origin=dict(case.origin))


class Shrinker:
    """Holds the best case so far and the one door every candidate passes through."""

    def __init__(self, case: Case, runner: Runner, *, k: int = 3, max_calls: int = 400,
                 seconds: float | None = None, corpus: Path | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        if case.verdict is None or not case.verdict.is_finding:
            raise CaseError("the case records no divergence to minimize")
        self.runner, self.k, self.corpus = runner, k, corpus
        self.max_calls, self.seconds = max_calls, seconds
        self.progress = progress or (lambda text: None)
        self.target = case.verdict
        self.best = case
        self.cache: dict[str, bool] = {}
        self.calls = self.hits = 0
        self.ops_settled_at = 0  # self.calls when the op count last dropped
        self.slips: list[Path] = []
        self.start = time.monotonic()
        self._values: tuple[str, dict[int, torch.Tensor]] | None = None

    # ------------------------------------------------------------ the chokepoint

    def run(self, case: Case, fresh: bool = False) -> Verdict:
        """One oracle call; ``fresh`` compiles with Inductor's caches off (the k/k checks)."""
        self.calls += 1
        config = {"force_disable_caches": True} if fresh else None
        return Verdict.from_dict(self.runner.run(task_for(case, config=config))["verdict"])

    def matches(self, verdict: Verdict) -> bool:
        """The same divergence as the target's (``fuzzer.judge.key``)."""
        return same_divergence(self.target, verdict)

    def test(self, candidate: Case | None) -> bool:
        """Is ``candidate`` new, smaller than the best in ``size_key`` and interesting? Adopts it
        as the new best when it is.

        A candidate seen before never counts as progress, even if it was interesting then: it was
        adopted and has since been improved on. That is what makes the fixpoint loop terminate.
        """
        if candidate is None or size_key(candidate) >= size_key(self.best):
            return False
        key = candidate.digest()
        if key in self.cache:
            self.hits += 1
            return False
        if self.calls >= self.max_calls:
            raise BudgetExhausted(f"--max-calls {self.max_calls} reached")
        if self.seconds is not None and time.monotonic() - self.start > self.seconds:
            raise BudgetExhausted("time budget reached")
        verdict = self.run(candidate)
        interesting = self.matches(verdict)
        self.cache[key] = interesting
        if interesting:
            if len(candidate.graph) < len(self.best.graph):
                self.ops_settled_at = self.calls
            candidate.verdict = focus(self.target, verdict)
            self.best = candidate
        elif verdict.is_finding:
            self.save_slip(candidate, verdict)
        return interesting

    def save_slip(self, candidate: Case, verdict: Verdict) -> None:
        if self.corpus is None:
            return
        candidate.verdict = verdict
        candidate.origin = {**candidate.origin, "slipped_from": self.target.kind}
        path = self.corpus / candidate.file_name()
        if not path.exists():
            candidate.save(path)
            self.slips.append(path)
            self.progress(f"slip: {verdict.summary()} -> {path}")

    def values(self) -> dict[int, torch.Tensor]:
        key = self.best.digest()
        if self._values is None or self._values[0] != key:
            self._values = (key, eager_values(self.best))
        return self._values[1]

    def reproduce(self, case: Case, times: int) -> list[Verdict]:
        return [self.run(case, fresh=True) for _ in range(times)]

    # ------------------------------------------------------------ passes

    def drop_other_outputs(self) -> bool:
        """Outputs other than the diverging one keep their whole subgraphs alive. A diverging
        gradient (training) is of an input, and the outputs it flows back from are not known:
        they are dropped ddmin-style, as many as keep it."""
        outputs = self.best.graph.outputs
        if len(outputs) == 1:
            return False
        if self.target.node in outputs:
            graph = self.best.graph.copy()
            graph.outputs = [self.target.node]
            return self.test(derive(self.best, graph, self.best.inputs))
        return self._ddmin(list(outputs), self._without_outputs)

    def _without_outputs(self, dropped: list[int]) -> Case | None:
        graph = self.best.graph.copy()
        graph.outputs = [o for o in graph.outputs if o not in dropped]
        return derive(self.best, graph, self.best.inputs) if graph.outputs else None

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
            if n not in graph.g:
                continue
            node = graph.node(n)
            new = graph.add("input", [], shape=node["shape"], dtype=node["dtype"], role="x")
            inputs[str(new)] = values[n].clone()
            graph.replace_uses(n, new)
        return derive(self.best, graph, inputs)

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
        frontier = list(node["inputs"])
        for _ in range(depth):
            for src in frontier:
                s = graph.node(src)
                if s["shape"] == node["shape"] and s["dtype"] == node["dtype"]:
                    return src
            frontier = [graph.node(f)["inputs"][0] for f in frontier
                        if len(graph.node(f)["inputs"]) == 1]
        return None

    def _bypass(self, nodes: list[int]) -> Case | None:
        graph = self.best.graph.copy()
        for n in nodes:
            if n in graph.g:
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
        target = graph.node(self.target.node)
        if any(ops.spec(graph.node(n)["op"]).category not in ELEMENTWISE for n in graph.op_ids()):
            return False
        shape = target["shape"]
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
            if self.test(self._slice_flat(lo, lo + size)):
                return True
        return False

    def _diverging_flat_index(self, shape: tuple[int, ...]) -> int | None:
        out = self.best.verdict.diverging if self.best.verdict else None
        elements = out.details.get("elements") if out else None
        if not elements:
            return None
        index = elements[0]["index"]
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
                graph.node(n)["shape"] = tuple(t.shape)
            inputs[str(n)] = t
        return derive(self.best, graph, inputs)

    def halve_dimensions(self) -> bool:
        """Big tensors make slow, unreadable repros: halve dims shared by the inputs.

        Inputs whose dim d has the same size are sliced together (a batch or channel dim runs
        through them all); slices the shape rules reject cost no oracle call.
        """
        for dim, size in self._shared_dims():
            for lo, hi in ((0, size // 2), (size // 2, size), (0, 1)):
                if hi - lo >= 1 and self.test(self._slice_dim(dim, size, lo, hi)):
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
                graph.node(n)["shape"] = tuple(t.shape)
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
                graph.node(n)["dtype"] = "float32"
            inputs[str(n)] = t
        candidate = derive(self.best, graph, inputs)
        if candidate is not None:
            candidate.dtype = "float32"
        return self.test(candidate)

    def _has_casts(self) -> bool:
        graph = self.best.graph
        nodes = [graph.node(n) for n in graph.op_ids()]
        return any(node["op"] == "cast_roundtrip"
                   or (node["op"] == "call" and generic.casts_dtype(node["attrs"]))
                   for node in nodes)

    def simplify_constants(self) -> bool:
        """Constants like 12345.678 distract the reader: try round numbers that still diverge."""
        progress = False
        for n in self.best.graph.op_ids():
            node = self.best.graph.node(n) if n in self.best.graph.g else None
            if node is None:
                continue
            for key, value in node["attrs"].items():
                if isinstance(value, float) and not isinstance(value, bool):
                    for simpler in _simpler_floats(value):
                        graph = self.best.graph.copy()
                        graph.node(n)["attrs"][key] = simpler
                        if self.test(derive(self.best, graph, self.best.inputs)):
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
                if self.test(derive(self.best, self.best.graph.copy(), inputs)):
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
                if self.test(make(part)):
                    progress = changed = True
                    live = set(self.best.graph.g)
                    items = [n for n in items if n in live and n not in part]
                else:
                    i += chunk
            if not changed:
                if chunk == 1:
                    break
                chunk = max(1, chunk // 2)
        return progress

    def passes(self) -> list[Callable[[], bool]]:
        return [self.drop_other_outputs, self.cut_to_eager_values, self.bypass_nodes,
                self.slice_to_diverging_elements, self.halve_dimensions, self.widen_to_float32,
                self.simplify_constants, self.simplify_inputs]

    def shrink(self, counts: dict[str, int]) -> None:
        """Run passes to a fixpoint; a pass that made progress moves to the front."""
        passes = self.passes()
        while True:
            for p in passes:
                if p():
                    self.progress(f"{p.__name__}: now {len(self.best.graph)} ops, "
                                  f"{elements(self.best)} input elements ({self.calls} calls)")
                    counts[p.__name__] = counts.get(p.__name__, 0) + 1
                    passes.remove(p)
                    passes.insert(0, p)
                    break
            else:
                return


def check_reproduces(shrinker: Shrinker, case: Case, k: int) -> None:
    """Refuse to start unless the case diverges the same way k times out of k."""
    verdicts = shrinker.reproduce(case, k)
    same = sum(shrinker.matches(v) for v in verdicts)
    if same == k:
        return
    seen = ", ".join(sorted({v.kind for v in verdicts}))
    if same == 0:
        raise NotReproducible(f"does not reproduce: 0/{k} runs showed {shrinker.target.kind} on "
                              f"output {shrinker.target.output} (saw: {seen}); fixed, or "
                              "dependent on another machine/torch")
    raise NotReproducible(f"flaky: {same}/{k} runs showed {shrinker.target.kind} (saw: {seen}); "
                          "a nondeterministic compiled result cannot be minimized reliably")


def minimize(case: Case, runner: Runner, *, k: int = 3, max_calls: int = 400,
             seconds: float | None = None, corpus: Path | None = None,
             progress: Callable[[str], None] | None = None) -> MinimizeResult:
    """Shrink ``case``; the result is re-verified k times and canonically renamed."""
    shrinker = Shrinker(case, runner, k=k, max_calls=max_calls, seconds=seconds, corpus=corpus,
                        progress=progress)
    check_reproduces(shrinker, case, k)
    counts: dict[str, int] = {}
    try:
        shrinker.shrink(counts)
    except BudgetExhausted as stop:
        shrinker.progress(f"stopped early: {stop}")
    final = canonical(shrinker.best)
    verdicts = shrinker.reproduce(final, k)
    renamed = final.verdict  # the best's, its nodes renamed: the target in the final's ids
    agreeing = [focus(renamed, v) for v in verdicts if same_divergence(renamed, v)]
    final.verdict = agreeing[0] if agreeing else verdicts[0]
    final.origin = {**case.origin, "minimized_from": case.digest()[:12]}
    return MinimizeResult(
        case=final, original_ops=len(case.graph), final_ops=len(final.graph),
        original_elements=elements(case), final_elements=elements(final),
        calls=shrinker.calls, cache_hits=shrinker.hits,
        seconds=time.monotonic() - shrinker.start, reliability=(len(agreeing), k),
        slips=shrinker.slips, passes=counts, calls_to_final_ops=shrinker.ops_settled_at)


def canonical(case: Case) -> Case:
    """Canonical renaming: node ids 0..n-1 in topological order, inputs re-keyed to match."""
    graph = case.graph.copy()
    mapping = graph.relabel()
    inputs = {str(mapping[int(k)]): v for k, v in case.inputs.items() if int(k) in mapping}
    return replace(case, graph=graph, inputs=inputs, config=dict(case.config),
                   versions=dict(case.versions), origin=dict(case.origin),
                   verdict=renamed(case.verdict, mapping))


def renamed(verdict: Verdict | None, mapping: dict[int, int]) -> Verdict | None:
    """The verdict with the node ids it names (outputs', gradients' inputs) renamed."""
    if verdict is None:
        return None
    new = lambda n: mapping.get(n, n) if isinstance(n, int) else n  # noqa: E731
    outputs = [replace(o, node=new(o.node), details={
        **o.details, **({"gradient_of": new(o.details["gradient_of"])}
                        if "gradient_of" in o.details else {})}) for o in verdict.outputs]
    return replace(verdict, node=new(verdict.node), outputs=outputs)


def _complexity(value: float) -> tuple[int, float]:
    return len(repr(abs(value))), abs(value)


def _simpler_floats(value: float) -> Iterator[float]:
    """Strictly simpler constants only (shorter to write, then smaller), so passes cannot cycle."""
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

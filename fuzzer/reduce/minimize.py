"""The minimizer: shrink a diverging case to the smallest graph and inputs that diverge alike.

``minimize`` wires the shrinker (``reduce.shrinker``, which knows nothing of execution) to a
worker: a candidate is interesting only if it shows the same divergence (``fuzzer.judge.key``:
kind, evidence class and output node, so a strong flip never shrinks into a weak one); the
output node moves only where the shrinker made an earlier node the output and that node shows
the same kind of divergence. One that diverges differently is a slip, saved to the corpus as a
new finding and not followed. The k/k checks before and after compile afresh (``Recipe.fresh``),
so a cached kernel cannot stand in for the compiler; a time budget covers both (the shrinker
stops early enough to leave the closing check the time the opening one took). The result is
canonically renamed and says whether the shrinker reached its fixpoint or stopped on a budget;
a candidate whose run outlasts a few times the case's own slowest run (``pool.scaled_timeout``)
has hung: it is dropped (neither interesting nor a slip) instead of waited for;
the minimized case's ``origin`` records it too (the nightly signs and drafts only a case
minimized to its fixpoint).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from fuzzer import clock
from fuzzer.corpus.case import Case, CaseError
from fuzzer.execute.pool import Runners, Spread, TaskRunner, run_within, scaled_timeout
from fuzzer.judge.key import focus, same_divergence
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import Verdict
from fuzzer.reduce.shrinker import BudgetExhausted, PassStats, Shrinker, Stop
from fuzzer.reduce.size import elements

MAX_CALLS = 400  # oracle calls per case: ``numfuzz minimize``'s default and the nightly's


class NotReproducible(CaseError):
    """The case does not diverge k times out of k (flaky, nondeterministic, or gone)."""


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
    passes: dict[str, PassStats] = field(default_factory=dict)  # calls and adoptions per pass
    calls_to_final_ops: int = 0  # oracle calls until the op count last dropped (graph-only work)
    fixpoint: bool = False  # every pass ran to no progress (else a budget stopped it)
    stopped: Stop | None = None  # the budget that stopped it, if one did
    dropped: int = 0  # candidates that hung past the scaled timeout, dropped unjudged

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
            ("hung candidates dropped", "", str(self.dropped)),
            ("fixpoint", "", "reached" if self.fixpoint else f"not reached ({self.stopped})"),
        ]

    @property
    def verdict(self) -> Verdict:
        """The minimized case's verdict (``minimize`` always sets it)."""
        assert self.case.verdict is not None, "minimize sets the minimized case's verdict"
        return self.case.verdict

    def pass_lines(self) -> list[str]:
        """Calls and adoptions per pass, for ``minimize.log``."""
        return [f"pass {name}: {s.calls} calls, {s.adopted} adopted"
                for name, s in self.passes.items()]


class Oracle:
    """The predicate ``minimize`` gives the shrinker: a worker run per candidate, interesting when
    it shows the target's divergence; slips (another divergence) saved to ``corpus``."""

    def __init__(self, target: Verdict, runner: TaskRunner, corpus: Path | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        self.target, self.runner, self.corpus = target, runner, corpus
        self.progress = progress or (lambda text: None)
        self.calls = 0
        self.slips: list[Path] = []
        # Where the k/k checks' fresh runs are shared out over the night's idle lanes: the
        # caller's pool (its runner's) and the night's ``Spread``; None: one after the other.
        self.spread: Spread | None = None
        self.pool: Runners | None = None
        self.urgent = False
        self.timeout: float | None = None  # per candidate, once the case's own time is known
        self.slowest = 0.0  # the slowest run of the case itself (the k/k check)
        self.dropped = 0  # candidates cut at ``timeout``: hung, not waited for

    def run(self, case: Case, fresh: bool = False) -> Verdict:
        """One oracle call; ``fresh`` compiles with no cache hits (the k/k checks)."""
        self.calls += 1
        task = case.task(recipe=case.recipe.fresh() if fresh else None)
        return run_within(self.runner, task, self.timeout).verdict

    def hung(self, verdict: Verdict) -> bool:
        """Was this candidate's run cut at the scaled timeout (and the target is no hang)?"""
        return self.timeout is not None and verdict.kind == Kind.TIMEOUT \
            and self.target.kind != Kind.TIMEOUT

    def matches(self, verdict: Verdict) -> bool:
        """The same divergence as the target's (``fuzzer.judge.key``)."""
        return same_divergence(self.target, verdict)

    def __call__(self, candidate: Case) -> bool:
        """Does ``candidate`` show the divergence its verdict names (the shrinker sets it: the
        target, or the target moved to an earlier output node)?"""
        want = candidate.verdict or self.target
        # Candidates that differ only in where their shared arguments sit in one storage have
        # the same compile-cache key (RESULTS §23, D): a cache hit would run another
        # candidate's program. Such candidates compile afresh, as the k/k checks do.
        verdict = self.run(candidate, fresh=bool(candidate.graph.passed_views()))
        if same_divergence(want, verdict):
            candidate.verdict = focus(want, verdict)
            return True
        if self.hung(verdict):  # not interesting, and no slip: the cut was ours
            self.dropped += 1
            self.progress(f"candidate dropped: no answer in {self.timeout:.0f}s")
            return False
        if verdict.is_finding:
            self.save_slip(candidate, verdict)
        return False

    def save_slip(self, candidate: Case, verdict: Verdict) -> None:
        if self.corpus is None:
            return
        candidate.verdict = verdict
        candidate.origin = {**candidate.origin, "slipped_from": str(self.target.kind)}
        path = self.corpus / candidate.file_name()
        if not path.exists():
            candidate.save(path)
            self.slips.append(path)
            self.progress(f"slip: {verdict.summary()} -> {path}")

    def reproduce(self, case: Case, times: int) -> list[Verdict]:
        """``times`` fresh runs of ``case``; shared out over idle lanes where ``spread`` and the
        caller's ``pool`` are given (each a fresh compile: the k/k checks' cost)."""
        task = case.task(recipe=case.recipe.fresh())

        def once(runner: TaskRunner) -> Verdict:
            began = clock.now()
            verdict = run_within(runner, task, self.timeout).verdict
            self.slowest = max(self.slowest, clock.now() - began)
            return verdict

        self.calls += times
        if self.spread is None or self.pool is None:
            return [once(self.runner) for _ in range(times)]
        return self.spread.spread([lambda pool: once(pool.get(case.device))] * times,
                                  self.pool, self.urgent)


def check_reproduces(oracle: Oracle, case: Case, k: int) -> None:
    """Refuse to start unless the case diverges the same way k times out of k."""
    verdicts = oracle.reproduce(case, k)
    same = sum(oracle.matches(v) for v in verdicts)
    if same == k:
        return
    seen = ", ".join(sorted({str(v.kind) for v in verdicts}))
    target = oracle.target
    if same == 0:
        raise NotReproducible(f"does not reproduce: 0/{k} runs showed {target.kind} on "
                              f"output {target.output} (saw: {seen}); fixed, or "
                              "dependent on another machine/torch")
    raise NotReproducible(f"flaky: {same}/{k} runs showed {target.kind} (saw: {seen}); "
                          "a nondeterministic compiled result cannot be minimized reliably")


def reliability(case: Case, runner: TaskRunner, k: int = 3) -> tuple[int, int]:
    """How many of k fresh runs show the case's divergence: what a draft reports, measured
    for a case minimized elsewhere (a case file from another night, or kept in the repo)."""
    assert case.verdict is not None  # a minimized case records the divergence it shows
    oracle = Oracle(case.verdict, runner)
    return sum(oracle.matches(v) for v in oracle.reproduce(case, k)), k


def minimize(case: Case, runner: TaskRunner, *, k: int = 3, max_calls: int = MAX_CALLS,
             seconds: float | None = None, corpus: Path | None = None,
             progress: Callable[[str], None] | None = None,
             share: tuple[Spread, Runners, bool] | None = None) -> MinimizeResult:
    """Shrink ``case``; the result is re-verified k times and canonically renamed. ``seconds``
    is the whole budget, both k/k checks included. ``share``: the night's ``Spread``, the
    caller's pool (``runner`` is its runner) and whether the case is urgent: the k/k checks'
    fresh runs are shared out over idle lanes."""
    if case.verdict is None or not case.verdict.is_finding:
        raise CaseError("the case records no divergence to minimize")
    oracle = Oracle(case.verdict, runner, corpus, progress)
    if share is not None:
        oracle.spread, oracle.pool, oracle.urgent = share
    start = clock.now()
    check_reproduces(oracle, case, k)
    checked = clock.now() - start  # what the closing k/k check will take, about
    # A candidate is a smaller program compiled like the case: one past a few times the case's
    # own slowest run has hung (one hung to the 300 s per-case timeout in RESULTS §30).
    oracle.timeout = scaled_timeout(oracle.slowest)
    # The k/k check above counts against --max-calls (so does nothing after shrinking).
    shrinker = Shrinker(case, oracle, max_calls=max(0, max_calls - k),
                        seconds=None if seconds is None else max(0.0, seconds - 2 * checked),
                        progress=progress)
    try:
        shrinker.shrink()
    except BudgetExhausted as stop:
        shrinker.progress(f"stopped early: {stop}")
    final = canonical(shrinker.best)
    oracle.timeout = None  # the closing k/k check waits as the opening one did
    verdicts = oracle.reproduce(final, k)
    renamed_target = final.verdict  # the best's, its nodes renamed: the target in final's ids
    # the best is the case (checked above) or a candidate the oracle gave a verdict
    assert renamed_target is not None
    agreeing = [focus(renamed_target, v) for v in verdicts if same_divergence(renamed_target, v)]
    final.verdict = agreeing[0] if agreeing else verdicts[0]
    final.origin = {**case.origin, "minimized_from": case.digest()[:12],
                    "fixpoint": shrinker.fixpoint}
    return MinimizeResult(
        case=final, original_ops=len(case.graph), final_ops=len(final.graph),
        original_elements=elements(case), final_elements=elements(final),
        calls=oracle.calls, cache_hits=shrinker.hits,
        seconds=clock.now() - start, reliability=(len(agreeing), k),
        slips=oracle.slips, passes=shrinker.stats, calls_to_final_ops=k + shrinker.ops_settled_at,
        fixpoint=shrinker.fixpoint, stopped=shrinker.stopped, dropped=oracle.dropped)


def canonical(case: Case) -> Case:
    """Canonical renaming: node ids 0..n-1 in topological order, inputs re-keyed to match."""
    graph = case.graph.copy()
    mapping = graph.relabel()
    inputs = {str(mapping[int(k)]): v for k, v in case.inputs.items() if int(k) in mapping}
    return replace(case, graph=graph, inputs=inputs, versions=dict(case.versions),
                   origin=dict(case.origin), verdict=renamed(case.verdict, mapping))


def renamed(verdict: Verdict | None, mapping: dict[int, int]) -> Verdict | None:
    """The verdict with the node ids it names (outputs', and the inputs whose gradient or state
    after the call an output verdict is of) renamed."""
    if verdict is None:
        return None
    new = lambda n: mapping.get(n, n) if isinstance(n, int) else n  # noqa: E731
    outputs = [replace(o, node=new(o.node),
                       details=replace(o.details, gradient_of=new(o.details.gradient_of),
                                       state_of=new(o.details.state_of)))
               for o in verdict.outputs]
    return replace(verdict, node=new(verdict.node), outputs=outputs)

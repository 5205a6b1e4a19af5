"""A fuzzing campaign: generate cases, run them on worker processes, save findings as they appear.

Case ``i`` of a campaign is a pure function of (seed, i, grammar, dtype), so a campaign is resumable
from a small state file listing which indices are done, and any case can be regenerated exactly.
Findings are written to the corpus the moment their verdict arrives.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fuzzer.corpus import guided, harness
from fuzzer.corpus.case import Case
from fuzzer.corpus.files import atomic_write
from fuzzer.errors import HarnessError
from fuzzer.execute.runner import Task
from fuzzer.execute.workers import Recycle, Runner, assign_gpus, sweep_stale_temp, visible_gpus
from fuzzer.gen import inputs, strategy
from fuzzer.ir.graph import Graph
from fuzzer.judge.oracle import COUNTED, Verdict

STATE_FILE = ".numfuzz-state.json"
NOT_GENERATED = "(not generated)"  # the strategy row of cases whose generation raised


@dataclass
class Settings:
    out: Path
    device: str = "cpu"
    cases: int | None = None
    seconds: float | None = None
    seed: int = 0
    grammar: str = "mixed"
    dtypes: tuple[str, ...] = ("float32", "bfloat16", "float16")
    draws: int = 4
    workers: int = 1
    gpus: tuple[int, ...] | None = None  # --gpus: indices of the visible GPUs (default all)
    backend: str = "inductor"
    config: dict = field(default_factory=dict)
    timeout: float = 300
    resume: bool = False
    keep_benign: bool = False  # also save weak-flip and benign cases (not findings)
    policy: str = "float64"  # oracle.POLICIES; parity makes every discrete mismatch a finding
    seed_graph: Graph | None = None  # --seed-model: mutate this graph instead of generating
    seed_inputs: dict | None = None
    seed_model: str = ""  # the file seed_graph was captured from
    strategies: dict[str, float] | None = None  # name -> weight (gen.strategy); None: defaults
    surface: dict = field(default_factory=dict)  # execute.surface.Surface: how cases compile
    search: str = "random"  # guided.SEARCHES: guided mutates the best near misses too
    recycle: Recycle = Recycle()  # when a worker is replaced by a fresh one (execute.workers)

    def weights(self) -> dict[str, float]:
        return self.strategies if self.strategies is not None \
            else strategy.parse_weights((), self.grammar)


@dataclass
class Outcome:
    index: int
    verdict: Verdict
    path: Path | None  # the case file written, for findings
    new: bool  # False when the same case was already in the corpus
    strategy: str = ""  # what the case was spent on (gen.strategy), and the worker seconds
    seconds: float = 0.0


@dataclass
class StrategyYield:
    """What one strategy gave: cases run, findings saved, worker seconds spent."""

    cases: int = 0
    findings: int = 0
    seconds: float = 0.0
    kinds: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict:
        return {"cases": self.cases, "findings": self.findings,
                "seconds": round(self.seconds, 1), "kinds": dict(self.kinds)}


@dataclass
class Summary:
    cases: int = 0
    findings: Counter = field(default_factory=Counter)
    skipped: int = 0
    counted: Counter = field(default_factory=Counter)  # weak-flip, benign: not findings
    harness_errors: int = 0  # numfuzz's own failures on a case: neither findings nor skips
    harness_messages: list[str] = field(default_factory=list)  # the first few
    stopped: str = ""  # why the campaign stopped before its budget (exit 2), else empty
    ledger_cases: int = 0  # cases the campaign's ledger marks done, earlier (resumed) runs too
    elapsed: float = 0.0
    paths: list[str] = field(default_factory=list)
    strategies: dict[str, StrategyYield] = field(default_factory=dict)

    def add(self, outcome: Outcome, strategy_name: str, seconds: float) -> None:
        """Count one finished case (whatever engine ran it)."""
        verdict = outcome.verdict
        self.cases += 1
        spent = self.strategies.setdefault(strategy_name, StrategyYield())
        spent.cases += 1
        spent.seconds += seconds
        if verdict.is_finding:
            spent.findings += 1
            spent.kinds[verdict.kind] += 1
            self.findings[verdict.kind] += 1
            self.paths.append(str(outcome.path))
        elif verdict.kind in COUNTED:
            self.counted[verdict.kind] += 1
        elif harness.is_harness_error(verdict):
            self.harness_error(verdict.message)
        elif verdict.kind == "skip":
            self.skipped += 1

    def harness_error(self, message: str) -> None:
        self.harness_errors += 1
        if len(self.harness_messages) < harness.FIRST:
            self.harness_messages.append(message)

    @property
    def cases_per_min(self) -> float:
        return 60.0 * self.cases / self.elapsed if self.elapsed else 0.0

    def to_dict(self) -> dict:
        return {"cases": self.cases, "findings": dict(self.findings),
                "not_findings": dict(self.counted), "skipped": self.skipped,
                "harness_errors": self.harness_errors, "harness_messages": self.harness_messages,
                "stopped": self.stopped,
                "elapsed_s": round(self.elapsed, 1), "cases_per_min": round(self.cases_per_min, 2),
                "corpus": self.paths,
                "strategies": {n: y.to_dict() for n, y in sorted(self.strategies.items())}}


def case_seed(seed: int, index: int) -> int:
    return (seed * 1_000_003 + index) & 0x7FFF_FFFF


def make_case(settings: Settings, index: int,
              pool: guided.SeedPool | None = None) -> tuple[Case, Task]:
    """Case ``index``: its graph, its input draws, and the task that tests them; with a guided
    search's ``pool``, maybe a mutant of one of its cases instead (``guided.wants_mutant``)."""
    seed = case_seed(settings.seed, index)
    dtype = settings.dtypes[index % len(settings.dtypes)]
    parent = guided.wants_mutant(seed, pool) if pool is not None else None
    if parent is not None:
        graph, draws = guided.mutant(parent, seed, settings.draws)
        dtype, chosen = parent.dtype, "guided"
    elif settings.seed_graph is not None:
        from fuzzer.gen.mutate import mutate

        graph = mutate(settings.seed_graph, seed)
        draws = inputs.draws_around(graph, settings.seed_inputs or {}, seed, settings.draws)
        chosen = "mutant"
    else:
        picked = strategy.choose(seed, settings.weights())
        graph = strategy.generate(picked, seed, settings.grammar, dtype)
        if settings.surface.get("training"):
            graph = strategy.for_training(graph)
        draws = inputs.draws(graph, seed, settings.draws, picked.cycle)
        chosen = picked.name
    origin = {"campaign_seed": settings.seed, "index": index, "strategy": chosen}
    if parent is not None:
        origin.update(parent_index=parent.index, parent_score=round(parent.score, 4))
    if settings.seed_model:
        origin["seed_model"] = settings.seed_model
    case = Case(graph=graph, inputs={}, device=settings.device, dtype=dtype,
                backend=settings.backend, config=dict(settings.config), seed=seed,
                grammar="mutant" if settings.seed_graph is not None or parent is not None
                else settings.grammar,
                origin=origin, policy=settings.policy, surface=dict(settings.surface))
    task = Task(graph=graph.to_dict(), draws=[d for _, d in draws],
                magnitudes=[m for m, _ in draws], device=settings.device,
                backend=settings.backend, config=dict(settings.config), policy=settings.policy,
                surface=dict(settings.surface))
    return case, task


class State:
    """Which case indices are done, persisted atomically after every case (for --resume)."""

    def __init__(self, path: Path, settings: Settings, resume: bool) -> None:
        self.path = path
        self.key = {"seed": settings.seed, "grammar": settings.grammar,
                    "dtypes": list(settings.dtypes), "backend": settings.backend,
                    "seed_model": settings.seed_model,
                    "strategies": {k: v for k, v in sorted(settings.weights().items())}}
        if settings.policy != "float64":  # older state files, which predate policies, resume
            self.key["policy"] = settings.policy
        for name in ("config", "surface"):  # likewise: only a non-default choice is recorded
            if getattr(settings, name):
                self.key[name] = dict(sorted(getattr(settings, name).items()))
        if settings.search != "random":
            self.key["search"] = settings.search
        self.done: set[int] = set()
        self.lock = threading.Lock()
        if resume and path.exists():
            data = json.loads(path.read_text())
            if data.get("key") == self.key:
                self.done = set(range(data["below"])) | set(data["extra"])

    def next_indices(self) -> Iterator[int]:
        i = 0
        while True:
            if i not in self.done:
                yield i
            i += 1

    def mark(self, index: int) -> None:
        with self.lock:
            self.done.add(index)
            below = 0
            while below in self.done:
                below += 1
            extra = sorted(i for i in self.done if i > below)
            atomic_write(self.path, json.dumps({"key": self.key, "below": below,
                                                "extra": extra}))


@dataclass
class Ran:
    """One case as a worker thread hands it to the driver: its case and task are None when
    generating it raised, its result a harness-error verdict when running it did."""

    index: int
    case: Case | None
    task: Task | None
    result: dict
    seconds: float
    details: str = ""  # the traceback of a driver-side harness error


def run_campaign(settings: Settings, on_outcome: Callable[[Outcome], None] | None = None,
                 should_stop: Callable[[], bool] = lambda: False) -> Summary:
    """Fuzz until the case count or time budget is spent; each finding is saved on arrival.

    A case that fails in numfuzz itself is a harness error of that case (``corpus.harness``) and
    the campaign goes on; it stops early, with ``Summary.stopped`` saying why, only when the
    harness stop rule trips or every worker thread is gone. A machine that cannot run cases at
    all (``HarnessError``, e.g. a worker that sees no GPU) still raises."""
    settings.out.mkdir(parents=True, exist_ok=True)
    sweep_stale_temp()  # what the workers of a killed run left behind
    state = State(settings.out / STATE_FILE, settings, settings.resume)
    errors = harness.HarnessLog(settings.out / harness.DIRECTORY)
    summary = Summary()
    start = time.monotonic()
    indices = state.next_indices()
    issued = len(state.done)  # --resume: --cases counts the whole campaign, not this run
    lock = threading.Lock()
    # Bounded, so that workers wait for the driver: a stop takes effect within a few cases.
    results: queue.Queue = queue.Queue(maxsize=2 * settings.workers)
    pool = guided.SeedPool() if settings.search == "guided" else None
    halt = threading.Event()  # the stop rule tripped: issue no more cases

    def next_index() -> int | None:
        nonlocal issued
        with lock:
            if halt.is_set() or should_stop():
                return None
            if settings.seconds is not None and time.monotonic() - start >= settings.seconds:
                return None
            if settings.cases is not None and issued >= settings.cases:
                return None
            issued += 1
            return next(indices)

    gpus = assign_gpus(settings.workers, settings.gpus, visible_gpus()) \
        if settings.device == "cuda" else [None] * settings.workers
    failures: list[BaseException] = []
    lost: list[str] = []

    def work(slot: int) -> None:
        threads = max(1, (os.cpu_count() or 1) // settings.workers)
        runner = Runner(settings.device, threads, settings.timeout, gpu=gpus[slot],
                        warmup=settings.backend == "inductor", recycle=settings.recycle)
        try:
            while not failures and (index := next_index()) is not None:
                results.put(run_one(settings, runner, index, pool))
        except HarnessError as err:  # this machine cannot run cases: stop every worker
            failures.append(err)
        except BaseException as err:  # a bug of this loop itself: say so, never silently
            lost.append(f"worker {slot} stopped: {type(err).__name__}: {err}")
        finally:
            runner.close()
            results.put(None)

    threads = [threading.Thread(target=work, args=(i,), daemon=True)
               for i in range(settings.workers)]
    for t in threads:
        t.start()
    running = len(threads)
    while running:
        ran = results.get()
        if ran is None:
            running -= 1
            continue
        outcome = _settle(settings, state, errors, ran)
        outcome.strategy = ran.case.origin.get("strategy", "") if ran.case else NOT_GENERATED
        outcome.seconds = ran.seconds
        summary.add(outcome, outcome.strategy, outcome.seconds)
        summary.elapsed = time.monotonic() - start
        report(outcome, on_outcome, errors, summary)
        if errors.tripped() and not halt.is_set():
            halt.set()
            summary.stopped = errors.stop_message()
    summary.elapsed = time.monotonic() - start
    summary.ledger_cases = len(state.done)
    if failures:
        raise failures[0]
    for message in lost:  # a worker thread that died is counted and shown, never silent
        summary.harness_errors += 1
        summary.harness_messages.append(message)
    if len(lost) == len(threads) and not summary.stopped:
        summary.stopped = f"stopped: every worker is gone; {lost[0]}"
    return summary


def report(outcome: Outcome, on_outcome: Callable[[Outcome], None] | None,
           errors: harness.HarnessLog, summary: Summary) -> None:
    """Hand an outcome to the caller (a progress bar, the nightly's ledger); what the caller's
    hook raises is a harness error of that case, never the campaign's end."""
    if on_outcome is None:
        return
    try:
        on_outcome(outcome)
    except Exception as err:
        message = harness.error_verdict("reporting", err).message
        summary.harness_error(message)
        errors.record(message, where={"index": outcome.index},
                      details=harness.traceback_text(err))


def run_one(settings: Settings, runner: Runner, index: int,
            pool: guided.SeedPool | None) -> Ran:
    """Generate and run case ``index`` on ``runner``; whatever raises is that case's harness
    error (a ``HarnessError``, the machine itself failing, is raised)."""
    began = time.monotonic()
    try:
        case, task = make_case(settings, index, pool)
    except Exception as err:
        return Ran(index, None, None, {"verdict": harness.error_verdict("generating", err)
                                       .to_dict()}, time.monotonic() - began,
                   harness.traceback_text(err))
    try:
        result = runner.run(task)
        if pool is not None:  # before this worker's next case is drawn
            pool.offer(case, task, result)
        Verdict.from_dict(result["verdict"])  # an unreadable answer is this case's error too
    except HarnessError:
        raise
    except Exception as err:
        runner.close()  # its state is unknown: the next case gets a fresh worker
        return Ran(index, case, task, {"verdict": harness.error_verdict("running", err)
                                       .to_dict()}, time.monotonic() - began,
                   harness.traceback_text(err))
    return Ran(index, case, task, result, time.monotonic() - began)


def _settle(settings: Settings, state: State, errors: harness.HarnessLog, ran: Ran) -> Outcome:
    """Save what a case earns and mark it done; a harness error is recorded for replay. Never
    raises: a failure to save is that case's harness error."""
    try:
        if ran.case is None:  # generating it failed: its verdict says how
            outcome = Outcome(ran.index, Verdict.from_dict(ran.result["verdict"]), None, False)
        else:
            outcome = record(settings, ran.index, ran.case, ran.task, ran.result)
    except Exception as err:
        outcome = Outcome(ran.index, harness.error_verdict("saving", err), None, False)
        ran.details = harness.traceback_text(err)
    try:
        state.mark(ran.index)
    except Exception as err:  # a full disk: the case ran, resume may run it again
        if not harness.is_harness_error(outcome.verdict):
            outcome = Outcome(ran.index, harness.error_verdict("saving state", err),
                              outcome.path, outcome.new)
    if harness.is_harness_error(outcome.verdict):
        errors.record(outcome.verdict.message, case=_replayable(ran, outcome.verdict),
                      where={"campaign_seed": settings.seed, "index": ran.index},
                      details=ran.details)
    else:
        errors.ok()
    return outcome


def _replayable(ran: Ran, verdict: Verdict) -> Case | None:
    """The case with its first draw as inputs, to save beside the harness record."""
    if ran.case is None or ran.task is None or not ran.task.draws:
        return None
    ran.case.inputs = ran.task.draws[0]
    ran.case.verdict = verdict
    return ran.case


def kept_case(settings: Settings, case: Case, task: Task, verdict: Verdict) -> Case | None:
    """The case file a verdict earns (the draw it names, and the verdict), or None: only
    findings are kept, and with ``keep_benign`` weak flips and benign differences too."""
    if not (verdict.is_finding or (settings.keep_benign and verdict.kind in COUNTED)):
        return None
    draw = verdict.draw or 0
    case.inputs = task.draws[draw]
    case.verdict = verdict
    case.origin["magnitude"] = task.magnitudes[draw] if task.magnitudes else None
    return case


def save_new(settings: Settings, name: str, data: bytes) -> tuple[Path, bool]:
    """Write a case file's bytes into the corpus unless the same case is there already."""
    path = settings.out / name
    new = not path.exists()
    if new:
        atomic_write(path, data)
    return path, new


def record(settings: Settings, index: int, case: Case, task: Task, result: dict) -> Outcome:
    """Turn a worker's answer into an outcome, writing the case file if it is kept."""
    verdict = Verdict.from_dict(result["verdict"])
    kept = kept_case(settings, case, task, verdict)
    if kept is None:
        return Outcome(index, verdict, None, False)
    path, new = save_new(settings, kept.file_name(), kept.to_bytes())
    return Outcome(index, verdict, path, new)

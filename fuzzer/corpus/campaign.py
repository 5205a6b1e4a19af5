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

from fuzzer.corpus import guided
from fuzzer.corpus.case import Case
from fuzzer.corpus.files import atomic_write
from fuzzer.errors import HarnessError
from fuzzer.execute.runner import HARNESS_ERROR, Task
from fuzzer.execute.workers import Runner, assign_gpus, visible_gpus
from fuzzer.gen import inputs, strategy
from fuzzer.ir.graph import Graph
from fuzzer.judge.oracle import COUNTED, Verdict

STATE_FILE = ".numfuzz-state.json"


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

    def weights(self) -> dict[str, float]:
        return self.strategies if self.strategies is not None \
            else strategy.parse_weights((), self.grammar)


@dataclass
class Outcome:
    index: int
    verdict: Verdict
    path: Path | None  # the case file written, for findings
    new: bool  # False when the same case was already in the corpus


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
        elif verdict.message.startswith(HARNESS_ERROR):
            self.harness_errors += 1
            if len(self.harness_messages) < 3:
                self.harness_messages.append(verdict.message)
        elif verdict.kind == "skip":
            self.skipped += 1

    @property
    def cases_per_min(self) -> float:
        return 60.0 * self.cases / self.elapsed if self.elapsed else 0.0

    def to_dict(self) -> dict:
        return {"cases": self.cases, "findings": dict(self.findings),
                "not_findings": dict(self.counted), "skipped": self.skipped,
                "harness_errors": self.harness_errors, "harness_messages": self.harness_messages,
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


def run_campaign(settings: Settings, on_outcome: Callable[[Outcome], None] | None = None,
                 should_stop: Callable[[], bool] = lambda: False) -> Summary:
    """Fuzz until the case count or time budget is spent; each finding is saved on arrival."""
    settings.out.mkdir(parents=True, exist_ok=True)
    state = State(settings.out / STATE_FILE, settings, settings.resume)
    summary = Summary()
    start = time.monotonic()
    indices = state.next_indices()
    issued = len(state.done)  # --resume: --cases counts the whole campaign, not this run
    lock = threading.Lock()
    results: queue.Queue = queue.Queue()
    pool = guided.SeedPool() if settings.search == "guided" else None

    def budget_left() -> bool:
        if should_stop():
            return False
        if settings.seconds is not None and time.monotonic() - start >= settings.seconds:
            return False
        return settings.cases is None or issued < settings.cases

    def next_job() -> tuple[int, Case, Task] | None:
        nonlocal issued
        with lock:
            if not budget_left():
                return None
            issued += 1
            index = next(indices)
        case, task = make_case(settings, index, pool)
        return index, case, task

    gpus = assign_gpus(settings.workers, settings.gpus, visible_gpus()) \
        if settings.device == "cuda" else [None] * settings.workers
    failures: list[BaseException] = []

    def work(slot: int) -> None:
        threads = max(1, (os.cpu_count() or 1) // settings.workers)
        runner = Runner(settings.device, threads, settings.timeout, gpu=gpus[slot],
                        warmup=settings.backend == "inductor")
        try:
            while not failures and (job := next_job()) is not None:
                index, case, task = job
                began = time.monotonic()
                result = runner.run(task)
                if pool is not None:  # before this worker's next case is drawn
                    pool.offer(case, task, result)
                results.put((index, case, task, result, time.monotonic() - began))
        except HarnessError as err:  # this machine cannot run cases: stop every worker
            failures.append(err)
        finally:
            runner.close()
            results.put(None)

    threads = [threading.Thread(target=work, args=(i,), daemon=True)
               for i in range(settings.workers)]
    for t in threads:
        t.start()
    running = len(threads)
    while running:
        item = results.get()
        if item is None:
            running -= 1
            continue
        *job, seconds = item
        outcome = record(settings, *job)
        state.mark(outcome.index)
        summary.add(outcome, job[1].origin.get("strategy", ""), seconds)
        summary.elapsed = time.monotonic() - start
        if on_outcome:
            on_outcome(outcome)
    summary.elapsed = time.monotonic() - start
    if failures:
        raise failures[0]
    return summary


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

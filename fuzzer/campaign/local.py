"""The local engine: a campaign on worker processes of this machine, findings saved on arrival.

One thread per worker slot asks the loop core (``loop.Loop``) for case indices, generates each
case and runs it on its own worker process; the driver thread settles what they hand back
(saves the case file of a finding the moment its verdict arrives, marks the ledger, counts).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from fuzzer import clock
from fuzzer.campaign import guided, harness
from fuzzer.campaign.loop import NOT_GENERATED, Loop, Outcome, Summary, kept
from fuzzer.campaign.settings import Settings, arm_of, kept_case, make_case, worker_env
from fuzzer.corpus.case import Case
from fuzzer.device import Device
from fuzzer.errors import HarnessError
from fuzzer.execute.task import RunResult, Task
from fuzzer.execute.workers import (
    WORKER_THREADS,
    LocalRunner,
    assign_gpus,
    sweep_stale_temp,
    visible_gpus,
)


@dataclass
class Ran:
    """One case as a worker thread hands it to the driver: its case and task are None when
    generating it raised, its result a harness-error verdict when running it did."""

    index: int
    case: Case | None
    task: Task | None
    result: RunResult
    seconds: float
    details: str = ""  # the traceback of a driver-side harness error

    @property
    def strategy(self) -> str:
        return self.case.origin.get("strategy", "") if self.case else NOT_GENERATED

    @property
    def arm(self) -> str:
        return arm_of(self.case.origin) if self.case else ""


def run_campaign(settings: Settings, on_outcome: Callable[[Outcome], None] | None = None,
                 should_stop: Callable[[], bool] = lambda: False,
                 between: Callable[[int, LocalRunner], None] | None = None) -> Summary:
    """Fuzz until the case count or time budget is spent; each finding is saved on arrival.
    ``between(slot, runner)`` is called by each worker thread before it takes a case: the
    nightly's lanes process raw findings there, on that worker (``nightly.lanes``).

    A case that fails in numfuzz itself is a harness error of that case (``harness``) and the
    campaign goes on; it stops early, with ``Summary.stopped`` saying why, only when the harness
    stop rule trips or every worker thread is gone. A machine that cannot run cases at all
    (``HarnessError``, e.g. a worker that sees no GPU) still raises."""
    sweep_stale_temp()  # what the workers of a killed run left behind
    loop = Loop(settings, on_outcome, should_stop)
    # Bounded, so that workers wait for the driver: a stop takes effect within a few cases.
    results: queue.Queue = queue.Queue(maxsize=2 * settings.workers)
    pool = guided.SeedPool() if settings.search == "guided" else None
    gpus = assign_gpus(settings.workers, settings.gpus, visible_gpus()) \
        if Device(settings.device).is_cuda else [None] * settings.workers
    failures: list[BaseException] = []
    lost: list[str] = []
    halt = threading.Event()  # the driver is leaving (Ctrl-C): take no further case
    runners: list[LocalRunner] = []

    def work(slot: int) -> None:
        runner = LocalRunner(settings.device, WORKER_THREADS, settings.timeout, gpu=gpus[slot],
                        warmup=settings.recipe.warms_up, recycle=settings.recycle,
                        env=worker_env(settings))
        runners.append(runner)
        try:
            while not failures and not halt.is_set():
                if between is not None:
                    between(slot, runner)
                if halt.is_set() or (index := loop.next_index()) is None:
                    break
                results.put(run_one(settings, runner, index, pool))
        except HarnessError as err:  # this machine cannot run cases: stop every worker
            failures.append(err)
        except BaseException as err:  # a bug of this loop itself: say so, never silently
            lost.append(f"worker {slot} stopped: {type(err).__name__}: {err}")
        finally:
            runner.close()
            results.put(None)

    threads = [threading.Thread(target=work, args=(slot,), daemon=True)
               for slot in range(settings.workers)]
    for t in threads:
        t.start()
    running = len(threads)
    try:
        while running:
            ran = results.get()
            if ran is None:
                running -= 1
                continue
            outcome = settle(settings, ran)
            loop.finish(outcome, ran.details, replayable(ran, outcome))
    except BaseException as err:  # Ctrl-C: what is saved stays saved; the workers stop first
        halt.set()
        stop_workers(threads, runners, results)
        if isinstance(err, KeyboardInterrupt):  # what ran so far, for the caller's report
            summary = loop.close()
            summary.stopped = summary.stopped or "interrupted"
            vars(err)["summary"] = summary  # an attribute KeyboardInterrupt does not declare
        raise
    summary = loop.close()
    if failures:
        raise failures[0]
    for message in lost:  # a worker thread that died is counted and shown, never silent
        loop.lost(message)
    if len(lost) == len(threads) and not summary.stopped:
        summary.stopped = f"stopped: every worker is gone; {lost[0]}"
    return summary


def stop_workers(threads: list[threading.Thread], runners: list[LocalRunner], results: queue.Queue,
                 seconds: float = 30) -> None:
    """End every worker thread before the driver leaves: their worker processes (in sessions of
    their own, so Ctrl-C never reached them) are killed, which ends the case each waits on, and
    their answers are drained. Threads left running inside torch abort the interpreter's exit
    ("terminate called without an active exception")."""
    deadline = time.monotonic() + seconds
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
        for runner in list(runners):
            worker = runner.worker
            if worker is not None:
                worker.kill()
        with contextlib.suppress(queue.Empty):
            results.get(timeout=0.2)


def run_one(settings: Settings, runner: LocalRunner, index: int,
            pool: guided.SeedPool | None) -> Ran:
    """Generate and run case ``index`` on ``runner``; whatever raises is that case's harness
    error (a ``HarnessError``, the machine itself failing, is raised)."""
    began = clock.now()  # the budget clock: a simulated one charges each run its fixed cost
    try:
        case, task = make_case(settings, index, pool)
    except Exception as err:
        return Ran(index, None, None, RunResult(harness.error_verdict("generating", err)),
                   clock.now() - began, harness.traceback_text(err))
    try:
        result = runner.run(task)
        if pool is not None:  # before this worker's next case is drawn
            pool.offer(case, task, result)
    except HarnessError:
        raise
    except Exception as err:
        runner.close()  # its state is unknown: the next case gets a fresh worker
        return Ran(index, case, task, RunResult(harness.error_verdict("running", err)),
                   clock.now() - began, harness.traceback_text(err))
    return Ran(index, case, task, result, clock.now() - began)


def settle(settings: Settings, ran: Ran) -> Outcome:
    """The outcome of a case, its case file written if it is kept (``loop.kept``). Never
    raises: a failure to save is that case's harness error."""
    def file() -> tuple[str, bytes] | None:
        found = kept_case(settings, ran.case, ran.task, ran.result.verdict) \
            if ran.case is not None and ran.task is not None else None
        return (found.file_name(), found.to_bytes()) if found is not None else None

    outcome, details = kept(settings.out, ran.index, ran.result.verdict, file)
    ran.details = details or ran.details
    outcome.strategy, outcome.seconds, outcome.arm = ran.strategy, ran.seconds, ran.arm
    return outcome


def replayable(ran: Ran, outcome: Outcome) -> Case | None:
    """For a harness error: the case with the draw the worker's verdict names (a finding whose
    file could not be saved keeps its diverging draw), else the first, to save beside the
    record."""
    if not harness.is_harness_error(outcome.verdict) or ran.case is None or ran.task is None \
            or not ran.task.draws:
        return None
    draw = ran.result.verdict.draw or 0
    ran.case.inputs = ran.task.draws[draw if 0 <= draw < len(ran.task.draws) else 0]
    ran.case.verdict = outcome.verdict
    return ran.case

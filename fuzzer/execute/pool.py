"""Worker processes by (device, environment): the one runner pool triage, the nightly and the Ray
fleet's actors share.

A knob read from the environment when a library loads (``ATEN_CPU_CAPABILITY``) needs a worker of
its own, started under that environment; every such worker also compiles afresh
(``recipe.FRESH_ENV``): the on-disk caches do not key on every variable, and a worker under
``ATEN_CPU_CAPABILITY=default`` would otherwise reuse vectorized kernels it cannot compile. A
pool can be seeded with runners it does not own (a test's shared worker) and can make its
runners elsewhere (``factory``: a Ray actor's).

``RunnerPool.until(deadline)`` is the same pool seen by work that must end by a deadline (the
nightly's stages after fuzzing): a run that would start after it raises ``OutOfTime``, and a run
on a local worker still in flight at the deadline is cut there (the worker killed, the run not
judged: ``OutOfTime`` too) instead of waiting out the per-case timeout. A Ray actor's run cannot
be cut; it is only not started after the deadline.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

from fuzzer import clock
from fuzzer.execute.recipe import FRESH_ENV
from fuzzer.execute.task import RunResult, Task
from fuzzer.execute.workers import NEVER, LocalRunner, Recycle
from fuzzer.judge.kinds import Kind

T = TypeVar("T")


class OutOfTime(Exception):
    """A deadline came before the work was done: what was cut short is not a result (not a
    timeout finding, not an attribution), and the work waits for another run."""


class Spread:
    """Jobs of one piece of work (each a function of a runner pool: triage's knob runs) shared
    out over idle workers: the caller posts them and runs what is left with its own pool, while
    other lanes take some with theirs (``help``); results come back in the order given."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[tuple[Callable[[Runners], Any], Future, bool]] = queue.Queue()
        self.urgent = 0  # jobs waiting that belong to urgent work (``waiting``)
        self.lock = threading.Lock()

    def spread(self, jobs: Sequence[Callable[[Runners], T]], own: Runners,
               urgent: bool = False) -> list[T]:
        futures: list[Future] = []
        for job in jobs:
            futures.append(Future())
            with self.lock:
                self.urgent += urgent
            self.jobs.put((job, futures[-1], urgent))
        while self.help(own):
            pass
        return [f.result() for f in futures]

    def help(self, pool: Runners) -> bool:
        """Run one waiting job with ``pool``; False when none waited."""
        try:
            job, future, urgent = self.jobs.get_nowait()
        except queue.Empty:
            return False
        with self.lock:
            self.urgent -= urgent
        try:
            future.set_result(job(pool))
        except BaseException as err:  # the caller raises it (an OutOfTime, a harness error)
            future.set_exception(err)
        return True

    def waiting(self) -> tuple[int, int]:
        """Jobs waiting, and how many of them belong to urgent work."""
        with self.lock:
            return self.jobs.qsize(), self.urgent


def run_here(jobs: Sequence[Callable[[Runners], T]], own: Runners) -> list[T]:
    """Jobs one after the other on ``own``: where no other worker can help."""
    return [job(own) for job in jobs]


class TaskRunner(Protocol):
    """What runs tasks: a worker process here (``workers.LocalRunner``), or a fleet actor's
    (``campaign.fleet.ActorRunner``). ``timeout``: cut the run after that many seconds where the
    runner can (a local worker); None: its own per-case timeout."""

    def run(self, task: Task, timeout: float | None = None) -> RunResult: ...

    def close(self) -> None: ...


class Runners(Protocol):
    """Runners by device and environment: a ``RunnerPool``, or its runners bounded by a
    deadline (``RunnerPool.until``: what the nightly hands triage)."""

    def get(self, device: str, env: dict | None = None) -> TaskRunner: ...


class RunnerPool:
    """Runners by (device, environment), started on first use and kept until ``close``."""

    def __init__(self, runners: dict[str, TaskRunner] | None = None, timeout: float = 300,
                 warmup: bool = True, factory: Callable[[str, dict], TaskRunner] | None = None,
                 recycle: Recycle = NEVER, threads: int = 1,
                 base_env: dict[str, str] | None = None) -> None:
        self.runners: dict[tuple, TaskRunner] = {}
        self.base_env = dict(base_env or {})  # every runner's (glibc's malloc checking)
        self.owned: set[tuple] = set()
        self.timeout, self.warmup, self.recycle, self.threads = timeout, warmup, recycle, threads
        self.factory = factory  # (device, env) -> a runner elsewhere (a Ray fleet's actor)
        for device, runner in (runners or {}).items():
            self.runners[(device, tuple(sorted(self.base_env.items())))] = runner

    def get(self, device: str, env: dict | None = None) -> TaskRunner:
        """A runner for ``device``; with ``env``, one started under it, compiling afresh."""
        env = {**self.base_env, **env, **FRESH_ENV} if env else dict(self.base_env)
        key = (device, tuple(sorted(env.items())))
        if key not in self.runners:
            self.runners[key] = self.factory(device, env) if self.factory else \
                LocalRunner(device, self.threads, timeout=self.timeout, env=env or None,
                       warmup=self.warmup, recycle=self.recycle)
            self.owned.add(key)
        return self.runners[key]

    def run(self, task: Task, env: dict | None = None) -> RunResult:
        """``task`` on the pool's runner for its device (and ``env``)."""
        return self.get(task.device, env).run(task)

    def until(self, deadline: float | None) -> RunnerPool | Until:
        """This pool for work that must end by ``deadline`` (``clock.now()``); None: no
        deadline, the pool itself."""
        return self if deadline is None else Until(self, deadline)

    def close(self) -> None:
        """Closes the runners this pool started; injected ones belong to their owner."""
        for key in list(self.owned):
            self.runners.pop(key).close()
        self.owned.clear()


class Until:
    """A pool's runners bounded by a deadline (``RunnerPool.until``); closing it closes nothing:
    the runners are the pool's."""

    def __init__(self, pool: RunnerPool, deadline: float) -> None:
        self.pool, self.deadline = pool, deadline

    def get(self, device: str, env: dict | None = None) -> Bounded:
        return Bounded(self.pool.get(device, env), self.deadline)

    def run(self, task: Task, env: dict | None = None) -> RunResult:
        return self.get(task.device, env).run(task)

    def close(self) -> None:
        """The pool's owner closes the runners."""


# Seconds a run may add to its own limit when its worker must start first (a fresh interpreter
# importing torch and compiling its warm-up case: 10 to 20 s on a 2-core CPU, more when loaded).
WORKER_START = 60.0
# A run's limit scaled to the time the same case took (``scaled_timeout``): ClusterFuzz tightens
# each run's timeout to the slowest crash time it observed; a compile of a smaller candidate or
# under another knob may take a few times the case's own, never ten times.
TIMEOUT_FACTOR = 3.0
TIMEOUT_SLACK = 10.0
MIN_TIMEOUT = 20.0


def scaled_timeout(seconds: float) -> float:
    """The limit for runs of a case whose own runs took at most ``seconds``: a candidate or knob
    run past it has hung, and is dropped rather than waited for to the per-case timeout."""
    return max(MIN_TIMEOUT, TIMEOUT_FACTOR * seconds + TIMEOUT_SLACK)


def run_within(runner: TaskRunner, task: Task, seconds: float | None) -> RunResult:
    """``task`` on ``runner``, cut after ``seconds`` (plus ``WORKER_START`` where its worker has
    yet to start) where the runner can cut a run (a local worker); None: its own timeout."""
    inner = runner.runner if isinstance(runner, Bounded) else runner
    if seconds is None or not isinstance(inner, LocalRunner):
        return runner.run(task)
    if inner.worker is None:
        seconds += WORKER_START
    return runner.run(task, timeout=seconds)


class Bounded:
    """One runner whose runs end by a deadline: not started after it (``OutOfTime``), and on a
    local worker cut at it rather than left to the per-case timeout (``OutOfTime`` again: a run
    cut by the caller's clock says nothing about the case)."""

    def __init__(self, runner: TaskRunner, deadline: float) -> None:
        self.runner, self.deadline = runner, deadline

    def run(self, task: Task, timeout: float | None = None) -> RunResult:
        """``task`` by the deadline; ``timeout``: at most this long too (a local worker)."""
        left = self.deadline - clock.now()
        if left <= 0:
            raise OutOfTime("the deadline came before this run")
        limit = left if timeout is None else min(left, timeout)
        if not isinstance(self.runner, LocalRunner) or limit >= self.runner.timeout:
            return self.runner.run(task)  # its own timeout comes first (or it cannot be cut)
        result = self.runner.run(task, timeout=limit)
        if result.verdict.kind == Kind.TIMEOUT and clock.now() >= self.deadline:
            raise OutOfTime("the deadline came while a run was in flight")
        return result

    def close(self) -> None:
        """The pool's owner closes the runner."""

"""The clock every time budget reads: a night's deadline and its stages, a campaign's ``--time``,
the runner pool's deadlines (``RunnerPool.until``, ``OutOfTime``) and the minimizer's budget.

Why a module of its own: a budget decides what gets done (how far the minimizer shrinks, whether
a cause is minimized, triaged and drafted tonight), and on real time that decision depends on how
fast and how loaded the machine is. Budget code asks the time here (``now``), never
``time.monotonic`` directly, so a test can install a simulated clock (``Simulated``) on which
a worker run or a subprocess costs a fixed number of seconds: a budget test then decides the same
way on an idle workstation and a loaded 2-core CI box, and still fails when the budget logic is
wrong. What is no budget stays on real time: a worker's I/O timeouts (a hung worker), a Ray
actor's silence, timestamps in logs and files, benchmarks.

Work tells the clock what it cost (``spent``) where it is done: a worker run
(``execute.workers.LocalRunner.run``, which every local run goes through) and a subprocess
(``run_subprocess``: collect_env, the bisector; ``triage.confirm.run_script``, the plain
reproducer and the repros it confirms, tells it itself). A wait the budget limits to ``seconds``
lasts ``wait_limit(seconds)`` real seconds. On the real clock both hooks are no-ops: the time
went by by itself, and a wait lasts what the budget allows.

This module imports nothing from the rest of numfuzz.
"""

from __future__ import annotations

import math
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

RUN = "run"  # one task on a worker (``LocalRunner.run``)
SUBPROCESS = "subprocess"  # a fresh interpreter: the plain reproducer, collect_env, the bisector


class Clock:
    """Real time: monotonic seconds, which run on by themselves."""

    def now(self) -> float:
        return time.monotonic()

    def wait_limit(self, seconds: float) -> float:
        """The real seconds a wait the budget allows ``seconds`` may last: those."""
        return seconds

    def spent(self, event: str, limit: float | None = None, cut: bool = False) -> bool:
        """``event`` ended (``cut``: at its ``limit``); on real time it took what it took, and
        what ended by itself ended within its limit."""
        return True


class Simulated(Clock):
    """A clock that moves only when work is done, by a fixed cost per event, whatever the
    machine's speed: a worker run costs ``costs[RUN]`` seconds, a subprocess
    ``costs[SUBPROCESS]``. Work whose cost is more than the limit it ran under did not end in
    time: it costs the whole limit and is cut there, as on real time (``spent`` says so, and
    the chokepoint turns it into a timeout). Real waits last ``patience`` seconds whatever the
    budget allows: work still going then is a hang, cut at its limit too (its outcome does not
    depend on the machine's speed, only how long a test waits for it). ``events`` counts what
    was charged."""

    def __init__(self, costs: dict[str, float] | None = None, patience: float = 60.0,
                 start: float = 1000.0) -> None:
        self.costs = {RUN: 1.0, SUBPROCESS: 5.0, **(costs or {})}
        self.patience = patience
        self.start = self.time = start
        self.events: Counter = Counter()
        self.lock = threading.Lock()  # a campaign's worker threads charge runs at once

    def now(self) -> float:
        with self.lock:
            return self.time

    @property
    def elapsed(self) -> float:
        """Simulated seconds since the clock was made."""
        return self.now() - self.start

    def wait_limit(self, seconds: float) -> float:
        return self.patience

    def spent(self, event: str, limit: float | None = None, cut: bool = False) -> bool:
        limit = math.inf if limit is None else max(0.0, limit)
        cost = self.costs[event]
        fits = not cut and cost <= limit
        self.advance(cost if fits or limit == math.inf else limit)
        with self.lock:
            self.events[event] += 1
        return fits

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.time += seconds


_clock: Clock = Clock()


def install(clock: Clock) -> Clock:
    """Make ``clock`` the one every budget reads (a test's ``Simulated``); returns the one it
    replaces, for the test to put back."""
    global _clock
    previous, _clock = _clock, clock
    return previous


def now() -> float:
    """Seconds on the budget clock (``time.monotonic`` unless a test installed another)."""
    return _clock.now()


def wait_limit(seconds: float) -> float:
    """The real seconds a wait that the budget allows ``seconds`` may last."""
    return _clock.wait_limit(seconds)


def spent(event: str, limit: float | None = None, cut: bool = False) -> bool:
    """``event`` (``RUN``, ``SUBPROCESS``) ended, under ``limit`` budget seconds; ``cut``: it was
    stopped at that limit. Moves a simulated clock, nothing on the real one; False when the
    work did not end within its limit (on a simulated clock, work that costs more than that:
    the caller treats it as cut there)."""
    return _clock.spent(event, limit, cut)


def run_subprocess(args: list[str], timeout: float, run: Callable[..., Any] = subprocess.run,
                   **options) -> subprocess.CompletedProcess:
    """``run(args, timeout=..., **options)`` (``subprocess.run``, or another with its contract,
    such as ``execute.zygote.run``) within ``timeout`` budget seconds, its cost told to the
    clock; raises ``subprocess.TimeoutExpired`` when cut, as ``run`` does."""
    try:
        proc = run(args, timeout=wait_limit(timeout), **options)
    except subprocess.TimeoutExpired:
        spent(SUBPROCESS, timeout, cut=True)
        raise
    if not spent(SUBPROCESS, timeout):  # a simulated clock: it would have run past its time
        raise subprocess.TimeoutExpired(args, timeout)
    return proc

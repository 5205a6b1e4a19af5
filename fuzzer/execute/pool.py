"""Worker processes by (device, environment): the one runner pool triage, the nightly and the Ray
fleet's actors share.

A knob read from the environment when a library loads (``ATEN_CPU_CAPABILITY``) needs a worker of
its own, started under that environment; every such worker also compiles afresh
(``recipe.FRESH_ENV``): the on-disk caches do not key on every variable, and a worker under
``ATEN_CPU_CAPABILITY=default`` would otherwise reuse vectorized kernels it cannot compile. A
pool can be seeded with runners it does not own (a test's shared worker) and can make its
runners elsewhere (``factory``: a Ray actor's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from fuzzer.execute.recipe import FRESH_ENV
from fuzzer.execute.runner import RunResult, Task
from fuzzer.execute.workers import NEVER, Recycle, Runner


class TaskRunner(Protocol):
    """What runs tasks: a local ``Runner``, or a fleet actor's (``campaign.fleet.ActorRunner``)."""

    def run(self, task: Task) -> RunResult: ...

    def close(self) -> None: ...


class RunnerPool:
    """Runners by (device, environment), started on first use and kept until ``close``."""

    def __init__(self, runners: dict[str, TaskRunner] | None = None, timeout: float = 300,
                 warmup: bool = True, factory: Callable[[str, dict], TaskRunner] | None = None,
                 recycle: Recycle = NEVER, threads: int = 1) -> None:
        self.runners: dict[tuple, TaskRunner] = {}
        self.owned: set[tuple] = set()
        self.timeout, self.warmup, self.recycle, self.threads = timeout, warmup, recycle, threads
        self.factory = factory  # (device, env) -> a runner elsewhere (a Ray fleet's actor)
        for device, runner in (runners or {}).items():
            self.runners[(device, ())] = runner

    def get(self, device: str, env: dict | None = None) -> TaskRunner:
        """A runner for ``device``; with ``env``, one started under it, compiling afresh."""
        env = {**env, **FRESH_ENV} if env else {}
        key = (device, tuple(sorted(env.items())))
        if key not in self.runners:
            self.runners[key] = self.factory(device, env) if self.factory else \
                Runner(device, self.threads, timeout=self.timeout, env=env, warmup=self.warmup,
                       recycle=self.recycle)
            self.owned.add(key)
        return self.runners[key]

    def run(self, task: Task, env: dict | None = None) -> RunResult:
        """``task`` on the pool's runner for its device (and ``env``)."""
        return self.get(task.device, env).run(task)

    def close(self) -> None:
        """Closes the runners this pool started; injected ones belong to their owner."""
        for key in list(self.owned):
            self.runners.pop(key).close()
        self.owned.clear()

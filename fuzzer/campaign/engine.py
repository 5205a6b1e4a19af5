"""Where a campaign's cases run, chosen once: this machine's worker processes (``local``) or a
Ray fleet's actors (``ray``: ``campaign.fleet``, the ``ray`` extra).

``Engine.of`` is the one place the choice is made, from ``--engine``; ``run`` and ``nightly``
hold the engine and ask it to run a campaign (``run``) and, for the nightly's later stages, for
a runner on the same machines (``runner``: ``None`` where the stages' own local workers serve).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fuzzer.campaign.loop import Outcome, Summary
from fuzzer.campaign.settings import Settings

if TYPE_CHECKING:  # Ray is an optional extra: only the ray engine loads it
    from fuzzer.campaign.fleet import Fleet
    from fuzzer.execute.pool import TaskRunner
    from fuzzer.execute.workers import LocalRunner


@dataclass
class Engine:
    """An engine and, for ``ray``, its fleet (started by ``of``, closed by ``close``)."""

    name: str = "local"
    fleet: Fleet | None = None
    address: str | None = None
    allow_mixed: bool = False
    report: dict = field(default_factory=dict)  # the fleet's own counts, after a run

    @classmethod
    def of(cls, name: str, settings: Settings | None = None, address: str | None = None,
           allow_mixed: bool = False, start: bool = False) -> Engine:
        """The engine ``--engine`` names; with ``start``, its fleet started now for
        ``settings`` (a night sends every stage's work to one fleet)."""
        engine = cls(name, address=address, allow_mixed=allow_mixed)
        if name == "ray" and start and settings is not None:
            from fuzzer.campaign.fleet import start_fleet

            engine.fleet = start_fleet(settings, address)
        return engine

    def run(self, settings: Settings, on_outcome: Callable[[Outcome], None] | None = None,
            between: Callable[[int, LocalRunner], None] | None = None) -> Summary:
        """One campaign on this engine; the fleet's counts land in ``report``. ``between``:
        called by each local worker thread between cases (``campaign.local.run_campaign``); a
        fleet's actors have no such point."""
        if self.name != "ray":
            from fuzzer.campaign.local import run_campaign

            return run_campaign(settings, on_outcome=on_outcome, between=between)
        from fuzzer.campaign.fleet import run_fleet

        summary, done = run_fleet(settings, self.address, on_outcome=on_outcome,
                                  fleet=self.fleet, allow_mixed=self.allow_mixed)
        self.report = done.to_dict()
        return summary

    @property
    def runner(self) -> Callable[[str, dict], TaskRunner] | None:
        """Where the nightly's later stages get runners: the fleet's actors, or None (local)."""
        return self.fleet.runner if self.fleet is not None else None

    def close(self) -> None:
        if self.fleet is not None:
            self.fleet.close()
            self.fleet = None

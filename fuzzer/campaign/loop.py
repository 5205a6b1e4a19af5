"""The one loop core every engine runs a campaign through: budget, ledger, harness log, summary.

An engine (``local``: threads over worker processes here; ``fleet``: Ray actors) only decides
where cases run. It asks ``Loop.next_index`` for work until the budget (cases, seconds, a stop
request, the harness stop rule) says no, and hands every finished case to ``Loop.finish``, which
marks the ledger, records a harness error for replay or counts a clean case, adds the outcome to
the summary, passes it to the caller's hook (a hook that raises is that case's harness error) and
applies the harness stop rule. ``Loop.close`` gives the summary.

A corpus that can no longer be written (a full disk, a folder made read-only) is not one case's
trouble: the first failed write stops the campaign at once, in one line, with every file saved
before it kept (``Outcome.unwritable``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fuzzer import clock
from fuzzer.campaign import harness
from fuzzer.campaign.settings import Settings
from fuzzer.corpus.case import Case
from fuzzer.corpus.files import atomic_write, write_failure
from fuzzer.corpus.ledger import Ledger
from fuzzer.execute.faults import OOM_HINT, OUT_OF_MEMORY
from fuzzer.judge.kinds import COUNTED, Kind
from fuzzer.judge.verdict import Verdict, severity_key

NOT_GENERATED = "(not generated)"  # the strategy row of cases whose generation raised


@dataclass
class Outcome:
    index: int
    verdict: Verdict
    path: Path | None  # the case file written, for findings
    new: bool  # False when the same case was already in the corpus
    strategy: str = ""  # what the case was spent on (gen.strategy), and the worker seconds
    seconds: float = 0.0
    unwritable: str = ""  # the corpus could not be written (a full disk): the campaign stops
    arm: str = ""  # the surface/strategy it was spent on (campaign.arms)


@dataclass
class StrategyYield:
    """What one strategy (or arm) gave: cases run, findings saved, worker seconds spent."""

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
    first_skip: str = ""  # why the first skipped case was not judged
    judged: int = 0  # cases eager, compiled and float64 all ran on (not skips, not harness errors)
    out_of_memory: int = 0  # skips because the GPU ran out of memory (counted in skipped too)
    counted: Counter = field(default_factory=Counter)  # weak-flip, benign, expected: not findings
    harness_errors: int = 0  # numfuzz's own failures on a case: neither findings nor skips
    harness_messages: list[str] = field(default_factory=list)  # the first few
    stopped: str = ""  # why the campaign stopped before its budget (exit 2), else empty
    ledger_cases: int = 0  # cases the campaign's ledger marks done, earlier (resumed) runs too
    elapsed: float = 0.0
    paths: list[str] = field(default_factory=list)
    strategies: dict[str, StrategyYield] = field(default_factory=dict)
    arms: dict[str, StrategyYield] = field(default_factory=dict)  # the same per surface/strategy
    strongest: str = ""  # the most severe finding's case file: what to look at first
    strongest_verdict: Verdict | None = field(default=None, repr=False)
    # Under freezing: graph values Inductor made constants, per case in each verdict's
    # ``frozen``; None while no case measured it (no freezing, or a torch without the hook).
    frozen: list[int] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        """Count one finished case (whatever engine ran it)."""
        verdict = outcome.verdict
        self.cases += 1
        if verdict.frozen is not None:
            self.frozen.append(verdict.frozen)
        spent = [self.strategies.setdefault(outcome.strategy, StrategyYield()),
                 *([self.arms.setdefault(outcome.arm, StrategyYield())] if outcome.arm else [])]
        for row in spent:
            row.cases += 1
            row.seconds += outcome.seconds
        self.judged += verdict.kind != Kind.SKIP
        if verdict.is_finding:
            for row in spent:
                row.findings += 1
                row.kinds[verdict.kind] += 1
            self.findings[verdict.kind] += 1
            self.paths.append(str(outcome.path))
            if self.strongest_verdict is None \
                    or severity_key(verdict) < severity_key(self.strongest_verdict):
                self.strongest, self.strongest_verdict = str(outcome.path), verdict
        elif verdict.kind in COUNTED:
            self.counted[verdict.kind] += 1
        elif harness.is_harness_error(verdict):
            self.harness_error(verdict.message)
        elif verdict.kind == Kind.SKIP:
            self.skipped += 1
            self.first_skip = self.first_skip or verdict.message
            self.out_of_memory += verdict.message.startswith(OUT_OF_MEMORY)

    def harness_error(self, message: str) -> None:
        self.harness_errors += 1
        if len(self.harness_messages) < harness.FIRST:
            self.harness_messages.append(message)

    @property
    def cases_per_min(self) -> float:
        return 60.0 * self.cases / self.elapsed if self.elapsed else 0.0

    def to_dict(self) -> dict:
        return {"cases": self.cases, "judged": self.judged, "findings": dict(self.findings),
                "not_findings": dict(self.counted), "skipped": self.skipped,
                "out_of_memory": self.out_of_memory,
                "hints": [OOM_HINT] if self.out_of_memory else [],
                "harness_errors": self.harness_errors, "harness_messages": self.harness_messages,
                "stopped": self.stopped,
                "elapsed_s": round(self.elapsed, 1), "cases_per_min": round(self.cases_per_min, 2),
                "corpus": self.paths, "strongest": self.strongest,
                "strategies": {n: y.to_dict() for n, y in sorted(self.strategies.items())},
                "arms": {n: y.to_dict() for n, y in sorted(self.arms.items())},
                **({"frozen": {"cases": len(self.frozen), "folding": sum(f > 0 for f in
                                                                         self.frozen),
                               "constants": sum(self.frozen)}} if self.frozen else {})}


class Loop:
    """One campaign's bookkeeping, whatever engine runs its cases (see the module docstring).
    ``next_index`` may be called from several threads; ``finish`` from the driver only."""

    def __init__(self, settings: Settings, on_outcome: Callable[[Outcome], None] | None = None,
                 should_stop: Callable[[], bool] = lambda: False) -> None:
        settings.check_resume()
        settings.out.mkdir(parents=True, exist_ok=True)
        self.settings, self.on_outcome, self.should_stop = settings, on_outcome, should_stop
        self.ledger = Ledger(settings.out, settings.ledger_key(), settings.resume)
        self.errors = harness.HarnessLog(settings.out / harness.DIRECTORY)
        self.summary = Summary()
        self.start = clock.now()
        self.indices = self.ledger.next_indices()
        self.issued = len(self.ledger.done)  # --resume: --cases counts the whole campaign
        self.lock = threading.Lock()

    def halted(self) -> bool:
        """The run stops (a stop rule, the caller, the time budget): no case is started now,
        not even one issued before and handed back by a lost actor."""
        s = self.settings
        return bool(self.summary.stopped) or self.should_stop() or \
            (s.seconds is not None and clock.now() - self.start >= s.seconds)

    def next_index(self) -> int | None:
        """The next case index to run, or None once the budget is spent or the run stops."""
        s = self.settings
        with self.lock:
            if self.halted() or (s.cases is not None and self.issued >= s.cases):
                return None
            self.issued += 1
            return next(self.indices)

    def finish(self, outcome: Outcome, details: str = "", replay: Case | None = None) -> None:
        """One case is done: mark it, record a harness error (with ``replay``, the case that
        shows it, and ``details``, its traceback) or count a clean case, add it to the summary,
        hand it to the hook, and apply the stop rule. Never raises."""
        try:
            self.ledger.mark(outcome.index)
        except Exception as err:  # the case ran; resume may run it again
            if isinstance(err, OSError) and not outcome.unwritable:
                outcome.unwritable = write_failure(err)
            if outcome.path is None and not harness.is_harness_error(outcome.verdict):
                outcome.verdict = harness.error_verdict("saving state", err)
                details = harness.traceback_text(err)
            elif outcome.path is not None:  # its case file is saved: the finding stands
                self.summary.harness_error(harness.error_verdict("saving state", err).message)
        if harness.is_harness_error(outcome.verdict):
            self.errors.record(outcome.verdict.message, case=replay, details=details,
                               where={"campaign_seed": self.settings.seed,
                                      "index": outcome.index})
        else:
            self.errors.ok()
        self.summary.add(outcome)
        self.summary.elapsed = clock.now() - self.start
        self._report(outcome)
        if outcome.unwritable and not self.summary.stopped:
            self.summary.stopped = (f"stopped at case {outcome.index}: {outcome.unwritable}; "
                                    f"the {len(self.summary.paths)} findings saved are kept")
        if self.errors.tripped() and not self.summary.stopped:
            self.summary.stopped = self.errors.stop_message()

    def _report(self, outcome: Outcome) -> None:
        """The caller's hook (a progress bar, the nightly's ledger); what it raises is a harness
        error of that case, never the campaign's end."""
        if self.on_outcome is None:
            return
        try:
            self.on_outcome(outcome)
        except Exception as err:
            message = harness.error_verdict("reporting", err).message
            self.summary.harness_error(message)
            self.errors.record(message, where={"index": outcome.index},
                               details=harness.traceback_text(err))

    def lost(self, message: str) -> None:
        """A worker thread or engine part died (a bug of numfuzz's own loop): counted, shown."""
        self.summary.harness_errors += 1
        self.summary.harness_messages.append(message)

    def close(self) -> Summary:
        self.summary.elapsed = clock.now() - self.start
        self.summary.ledger_cases = len(self.ledger.done)
        if self.errors.unsaved:  # counted above, but its replay record is missing: say so
            self.summary.harness_messages.append(
                f"{self.errors.unsaved} harness record(s) could not be written to "
                f"{self.errors.directory} (first: {self.errors.unsaved_because})")
        return self.summary


def unsaved(index: int, verdict: Verdict, err: OSError) -> str:
    """``Outcome.unwritable`` for case ``index`` whose file could not be written."""
    what = f"its {verdict.kind} finding was not saved (rerun the campaign to regenerate it); " \
        if verdict.is_finding else ""
    return what + write_failure(err)


def save_new(out: Path, name: str, data: bytes) -> tuple[Path, bool]:
    """Write a case file's bytes into the corpus ``out`` unless the same case is there already."""
    path = out / name
    new = not path.exists()
    if new:
        atomic_write(path, data)
    return path, new


def kept(out: Path, index: int, verdict: Verdict, file: Callable[[], tuple[str, bytes] | None]
         ) -> tuple[Outcome, str]:
    """The one way a case reaches the corpus, whatever engine ran it: ``file`` gives the case
    file's name and bytes (None: nothing kept), written unless already there, and the outcome
    says where. Never raises: a failure to make or write the file is the case's harness error
    (with its traceback, the second value), and one of the corpus itself (a full disk) stops
    the campaign (``Outcome.unwritable``)."""
    try:
        made = file()
        if made is None:
            return Outcome(index, verdict, None, False), ""
        path, new = save_new(out, *made)
        return Outcome(index, verdict, path, new), ""
    except Exception as err:
        outcome = Outcome(index, harness.error_verdict("saving", err), None, False)
        if isinstance(err, OSError):  # the corpus itself, not this case: the campaign stops
            outcome.unwritable = unsaved(index, verdict, err)
        return outcome, harness.traceback_text(err)

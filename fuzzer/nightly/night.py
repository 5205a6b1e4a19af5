"""A night's persisted state and settings, and what every stage of the nightly shares.

``reports/<date>/night.json`` says which stage a night reached (``Night``), so a killed night
started again on the same date resumes there; a night that finished and is started again on the
same date is a new run (``<date>#2``) with a fresh seed. ``Context`` is what the stages share:
settings, state, store, runner pool, log and the deadline after fuzzing. A finding's failure in
any stage is a harness error of that finding (``Context.harness_error``): counted in
``night.json``, logged, saved under ``<corpus>/harness/``, and the night goes on.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from fuzzer import clock
from fuzzer.campaign import arms, harness
from fuzzer.campaign.arms import Plan
from fuzzer.campaign.engine import Engine
from fuzzer.campaign.settings import Settings
from fuzzer.corpus.files import atomic_write
from fuzzer.errors import InputError
from fuzzer.execute import surface
from fuzzer.execute.pool import RunnerPool, Runners, Spread, Until
from fuzzer.nightly.recheck import Recheck
from fuzzer.reduce.minimize import MAX_CALLS
from fuzzer.report.store import Store, now
from fuzzer.triage import known
from fuzzer.triage.confirm import Interpreter
from fuzzer.triage.signature import SIGNATURE_K

Log = Callable[[str], None]
# Seconds one draft needs after its cause is recorded: the plain reproducer's check (a worker
# run or a few) and its run in a fresh interpreter (5 s for a one-op case on a 2-core CPU; a
# cold first compile can take 10 to 20 s), collect_env once a night (2 s). The bisector runs
# only in time beyond this.
DRAFT_RESERVE = 30.0
# Seconds more per draft for each torch named with --confirm-with: its repro run there (a fresh
# interpreter importing torch and one compile).
CONFIRM_RESERVE = 30.0


def plain_log(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} nightly: {text}", flush=True)


@dataclass
class NightSettings:
    reports: Path = Path("reports")
    campaign: Settings = field(default_factory=Settings)  # the night's campaign (device, recipe,
    # workers, cases …); its corpus, seed, time and resume are the night's (``night_campaign``)
    seconds: float | None = None  # the whole night; fuzzing gets fuzz_share of it
    seed: int | None = None  # default: derived from the date and run number
    corpus: Path | None = None  # default: reports/corpus, shared by all nights
    k: int = SIGNATURE_K
    max_calls: int = MAX_CALLS
    minimize_seconds: float | None = 900  # per case, at most; the night's deadline comes first
    # full pipelines (a bucket's representative) started per night, the rest waiting for the
    # next; None: as many as the night's time allows (a cap of 40 stopped a 75-minute night's
    # processing with 15 minutes left and 36 raw findings waiting: RESULTS §36)
    max_findings: int | None = None
    max_drafts: int = 5  # new root causes drafted per night, strongest first; the rest wait
    known_file: Path = known.KNOWN_FILE  # known causes: counted as hits, never drafted
    bisect: bool = True
    date: str | None = None  # default: today (local time)
    # The part of --time the campaign may run in; its lanes process raw findings beside it
    # (``nightly.lanes``), and after it every lane drains the backlog, then drafts and recheck.
    fuzz_share: float = 0.8
    engine: str = "local"  # or "ray": fuzz, minimize and triage on a Ray fleet's actors
    ray_address: str | None = None
    # Other torches (another environment's python, e.g. a nightly build): a cause is drafted
    # only when its minimized repro reproduces on every one of them (``triage.confirm``).
    confirm_with: tuple[Interpreter, ...] = ()
    # The catalogue surfaces the night's plan splits its time over (``campaign.arms``), by the
    # yield the store records; None: no plan, every case on the campaign's own (pinned) surface.
    surfaces: tuple[str, ...] | None = None
    pin_strategies: bool = False  # --strategy given: the strategies keep their weights
    recorded_plan: Plan | None = None  # --plan: replay this plan instead of making one

    @property
    def draft_reserve(self) -> float:
        """Seconds one draft needs after its cause is recorded, its confirmations included."""
        return DRAFT_RESERVE + CONFIRM_RESERVE * len(self.confirm_with)

    @property
    def corpus_dir(self) -> Path:
        return self.corpus or self.reports / "corpus"

    def night_campaign(self, night: Night) -> Settings:
        """Tonight's campaign: into the night's corpus, with its seed, in what is left of the
        fuzzing share of the budget; after a kill it resumes tonight's case indices."""
        seconds = None if self.seconds is None else \
            max(1.0, self.seconds * self.fuzz_share - night.fuzz_seconds)
        plan = Plan.from_dict(night.plan) if night.plan else None
        return replace(self.campaign, out=self.corpus_dir, seed=night.seed, seconds=seconds,
                       resume=night.cases > 0, plan=plan)

    def plan_from(self, store: Store, night: Night) -> Plan | None:
        """Tonight's plan: the surfaces here that run, crossed with the strategies, split by
        the yields every earlier night recorded (``campaign.arms``); None without surfaces."""
        if self.recorded_plan is not None:
            return self.recorded_plan
        if self.surfaces is None:
            return None
        c = self.campaign
        entries, _ = surface.available(c.device, c.recipe.backend, list(self.surfaces))
        if not entries:
            raise InputError(f"no surface of {', '.join(self.surfaces)} runs here "
                             f"({c.device}, backend {c.recipe.backend})")
        used = arm_history(store, night.date, exclude=night.id)
        return arms.plan(entries, c.weights(), used, pin_strategies=self.pin_strategies)


@dataclass
class Spent:
    """What tonight's campaign spent on one strategy or arm: cases, raw findings, worker
    seconds."""

    cases: int = 0
    findings: int = 0
    seconds: float = 0.0

    def add(self, finding: bool, seconds: float) -> None:
        self.cases += 1
        self.findings += finding
        self.seconds = round(self.seconds + seconds, 1)


@dataclass
class Confirmed:
    """A cause whose repro ran under the ``--confirm-with`` torches tonight: its runs
    (``confirm.Run`` as plain data), whether it was drafted, the newer torch it no longer
    reproduces on, and why (``drafts.confirmed``)."""

    signature: str
    title: str
    runs: list[dict]
    drafted: bool
    fixed_in: str | None
    why: str


# The night's typed records, by field: how each is read back from night.json.
RECORDS = {"strategies": Spent, "arms": Spent}


@dataclass
class Night:
    """The persisted state of one night (``reports/<date>/night.json``)."""

    date: str
    run: int
    seed: int
    stage: str = "fuzz"
    status: str = "running"
    started: str = field(default_factory=now)  # UTC, comparable with the store's timestamps
    cases: int = 0
    skipped: int = 0
    fuzz_seconds: float = 0.0
    raw_findings: dict[str, int] = field(default_factory=dict)  # campaign findings by kind
    raw_counted: dict[str, int] = field(default_factory=dict)  # weak flips, benign: not findings
    found: list[str] = field(default_factory=list)  # case files tonight's campaign reported
    rechecks: list[Recheck] = field(default_factory=list)  # the open causes rechecked
    backlog: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)  # wall time per stage
    drafts_deferred: int = 0
    unfinished: list[str] = field(default_factory=list)  # left for the next night, and why
    strategies: dict[str, Spent] = field(default_factory=dict)  # what each strategy spent
    harness_errors: int = 0  # numfuzz's own failures on a case or finding (campaign.harness)
    harness_messages: list[str] = field(default_factory=list)  # the first few
    stopped: str = ""  # why fuzzing stopped before its budget (the harness stop rule)
    plan: dict = field(default_factory=dict)  # tonight's plan of arms (campaign.arms), if any
    arms: dict[str, Spent] = field(default_factory=dict)  # what each arm spent tonight
    confirmed: list[Confirmed] = field(default_factory=list)  # causes run on other torches
    # The backlog's buckets (``nightly.backlog``: what each holds and how each case settled),
    # and per representative the seconds its full pipeline took.
    buckets: list[dict] = field(default_factory=list)
    cause_seconds: dict[str, float] = field(default_factory=dict)
    workers: int = 1  # lanes: the campaign's workers, each fuzzing or processing
    # The stage being timed and when it began, and when this file was last written (epoch
    # seconds): a kill loses no stage's time up to the last save (``count_interrupted``).
    timed_stage: str = ""
    stage_since: float = 0.0
    saved_at: float = 0.0

    @property
    def id(self) -> str:
        return f"{self.date}#{self.run}"

    @property
    def exit_status(self) -> int:
        """0 a clean night, 1 one with harness errors that ran to its end, 2 one stopped early."""
        return 2 if self.stopped else 1 if self.harness_errors else 0

    def harness_error(self, message: str) -> None:
        self.harness_errors += 1
        if len(self.harness_messages) < harness.FIRST:
            self.harness_messages.append(message)

    @classmethod
    def from_dict(cls, data: dict) -> Night:
        """A night as ``save`` wrote it, its records typed again (TypeError on a field or a
        record's key this numfuzz does not know)."""
        fields_ = dict(data)
        for name, record in RECORDS.items():
            fields_[name] = {k: record(**v) for k, v in (fields_.get(name) or {}).items()}
        fields_["confirmed"] = [Confirmed(**c) for c in fields_.get("confirmed") or []]
        fields_["rechecks"] = [Recheck(**r) for r in fields_.get("rechecks") or []]
        return cls(**fields_)

    def save(self, directory: Path) -> None:
        self.saved_at = time.time()
        atomic_write(directory / "night.json", json.dumps(asdict(self), indent=1))

    def count_interrupted(self) -> None:
        """A stage a kill cut short: its time up to the last save counts against the night's
        budget, so the resumed night ends when the whole night should."""
        if self.timed_stage and self.saved_at >= self.stage_since > 0:
            seconds = self.stage_seconds
            seconds[self.timed_stage] = round(seconds.get(self.timed_stage, 0.0)
                                              + self.saved_at - self.stage_since, 1)
        self.timed_stage, self.stage_since = "", 0.0


def arm_history(store: Store, today: str, exclude: str = "") -> dict[str, arms.Usage]:
    """Every arm's usage the store records, each night discounted by its age on ``today``
    (``campaign.arms.history``), leaving out night ``exclude`` (tonight's own)."""
    return arms.history((night_age(row["night"], today), row["arm"], arms.Usage(
        row["cases"], row["seconds"], row["findings"], row["causes"], row["value"]))
        for row in store.arm_nights() if row["night"] != exclude)


def night_age(night_id: str, today: str) -> int:
    """Nights between a night's date and ``today`` (both ``YYYY-MM-DD``; 0 when unreadable)."""
    import datetime

    try:
        then = datetime.date.fromisoformat(night_id.split("#")[0])
        return max(0, (datetime.date.fromisoformat(today) - then).days)
    except ValueError:
        return 0


def night_of(summary: Path) -> Night:
    """The night a ``SUMMARY.md`` was written for (its ``night.json`` beside it)."""
    return Night.from_dict(json.loads((summary.parent / "night.json").read_text()))


def latest_night(reports: Path) -> Night | None:
    """The most recently started night under ``reports``, or None."""
    nights = []
    for path in reports.glob("*/night.json"):
        try:
            nights.append(Night.from_dict(json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            continue  # a foreign or half-written file is not a night
    return max(nights, key=lambda n: (n.started, n.date, n.run), default=None)


def open_night(settings: NightSettings, directory: Path, log: Log) -> Night:
    """Resume tonight's unfinished run, or start a new one."""
    path = directory / "night.json"
    run = 1
    if path.is_file():
        try:  # night.save writes atomically: a bad file was edited or came from elsewhere
            night = Night.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError, AttributeError) as err:
            raise InputError(f"{path}: not a night numfuzz can resume ({type(err).__name__}); "
                             "move it aside to start this date's night anew") from None
        if night.status == "running":
            night.count_interrupted()
            log(f"resuming night {night.id} at stage {night.stage}")
            return night
        run = night.run + 1
        if (directory / "SUMMARY.md").exists():
            (directory / "SUMMARY.md").replace(directory / f"SUMMARY-{run - 1}.md")
    seed = settings.seed if settings.seed is not None else \
        int(directory.name.replace("-", "")) * 100 + run
    night = Night(date=directory.name, run=run, seed=seed)
    night.save(directory)
    log(f"night {night.id} starts: seed {seed}, reports in {directory}")
    return night


@dataclass
class Drafting:
    """What writing a draft needs of its night, and no more (``drafts.write_draft_for``): the
    folder drafts go to, the store, runners bounded by the night's deadline and the time left
    (``left``: seconds), the log, the known list, whether to bisect, the time each draft still to
    come needs, and whether tonight's causes were confirmed on other torches. A night makes one
    (``Context.drafting``); ``findings --draft`` one of its own, with no night."""

    directory: Path
    store: Store
    runners: Callable[[], Runners]
    left: Callable[[], float]
    log: Log
    known_file: Path = known.KNOWN_FILE
    bisect: bool = False
    draft_reserve: float = DRAFT_RESERVE
    confirmed: bool = False


@dataclass
class Context:
    settings: NightSettings
    night: Night
    directory: Path
    store: Store
    pool: RunnerPool
    log: Log
    deadline: float | None = None
    engine: Engine = field(default_factory=Engine)  # where cases run (a Ray fleet, or here)
    # The night's record, shared by the lanes' threads and the campaign's driver thread.
    lock: threading.RLock = field(default_factory=threading.RLock)
    # Where a lane's triage shares its knob runs with idle lanes (``nightly.lanes``); None: one
    # after the other on the lane's own workers.
    spread: Spread | None = None

    def checkpoint(self) -> None:
        """Save the night between items (what a kill would otherwise lose: counts, the time
        spent); a full disk here is not fatal, the next save tries again."""
        with self.lock, contextlib.suppress(OSError):
            self.night.save(self.directory)

    def harness_error(self, stage: str, key: str, err: BaseException) -> None:
        """One finding's ``stage`` raised: count it, log it, keep it for replay; go on."""
        message = harness.error_verdict(stage, err).message
        with self.lock:
            self.night.harness_error(f"{key}: {message}")
        self.log(f"{key}: {message}")
        self.checkpoint()  # a full disk: counted all the same, saved later
        harness.HarnessLog(self.settings.corpus_dir / harness.DIRECTORY).record(
            message, where={"night": self.night.id, "item": key},
            details=harness.traceback_text(err))

    def advance(self, stage: str) -> None:
        self.night.stage = stage
        self.night.save(self.directory)

    def out_of_time(self, deadline: float | None = None) -> bool:
        """Past ``deadline`` (default: the night's)?"""
        return self.left(deadline) <= 0

    def left(self, deadline: float | None = None) -> float:
        """Seconds before ``deadline`` (default: the night's); infinite without one."""
        deadline = self.deadline if deadline is None else deadline
        return math.inf if deadline is None else deadline - clock.now()

    def runners(self, deadline: float | None = None) -> RunnerPool | Until:
        """The pool for work that must end by ``deadline`` (default: the night's): a run is not
        started after it and a local one in flight is cut there (``OutOfTime``)."""
        return self.pool.until(self.deadline if deadline is None else deadline)

    def drafting(self) -> Drafting:
        """What tonight's drafts need of the night."""
        return Drafting(self.directory, self.store, self.runners, self.left, self.log,
                        self.settings.known_file, self.settings.bisect,
                        self.settings.draft_reserve, bool(self.settings.confirm_with))

    def drafts_owed(self) -> int:
        """Open root causes without a draft yet that tonight may still draft."""
        owed = sum(1 for f in self.store.findings(status="open") if f.awaits_draft)
        return min(owed, self.settings.max_drafts)

    def processing_deadline(self) -> float | None:
        """When minimizing and triaging must stop: the night's deadline less the time its drafts
        need (``draft_reserve`` for each draft owed, and for the case in flight, which may be a
        new cause), so a cause minimized and triaged tonight is drafted tonight."""
        if self.deadline is None:
            return None
        drafts = min(self.drafts_owed() + 1, self.settings.max_drafts)
        return self.deadline - self.settings.draft_reserve * drafts

"""The nightly job: fuzz, minimize what is new, triage, store, draft, recheck, summarize.

What cron runs (``numfuzz nightly --device auto --time 6h --reports reports/``). One night lives in
``reports/<date>/``: ``night.json`` says which stage it reached, so a killed night started again on
the same date resumes there (the campaign resumes its own case indices; the store's ``processed``
table says which case files are done, written in the same transaction as their hit). A night that
finished and is started again on the same date is a new run (``<date>#2``) with a fresh seed.

Stages: fuzz (``campaign.run_campaign``; with ``--time``, ``fuzz_share`` of the budget); process
(each corpus case file no night has processed, strongest first: minimize, attribute over the full
knob set, cause signature; a known cause is a hit on its ``known.toml`` entry, any other a hit on
its root cause, merged with a near match, or a new one; a case file an earlier night processed
that tonight's campaign found again is a hit on its cause); drafts (root causes without one,
strongest first, at most ``max_drafts``: bisector, repro run, ``reports/<date>/<signature>.md``);
recheck (open causes not seen tonight, replayed k times on the installed torch); ``SUMMARY.md``.
After fuzzing, the stages share what is left of ``--time`` and check the deadline between items;
what is left over waits for the next night.

Nothing one case or one finding does ends the night: any exception while fuzzing a case or while
minimizing, triaging, drafting or rechecking a finding is a harness error of that item
(``corpus.harness``): counted in ``night.json``, logged, saved under ``<corpus>/harness/`` and
listed in SUMMARY.md, and the night goes on. The fuzzing stage stops early only by the harness
stop rule; the rest of the night still runs. Log lines are plain text with a timestamp; the exit
status (``Night.exit_status``) is 0 for a clean night, 1 for one that ran to its end with harness
errors, 2 for one whose fuzzing stopped early.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fuzzer.corpus import harness
from fuzzer.corpus.case import Case, CaseError, versions
from fuzzer.corpus.files import atomic_write
from fuzzer.execute.workers import Recycle
from fuzzer.ir import ops
from fuzzer.ir.graph import op_chain, readable_chain
from fuzzer.judge.key import same_divergence
from fuzzer.judge.oracle import COUNTED, RANK, severity_key
from fuzzer.report import draft
from fuzzer.report.store import Finding, Store, now
from fuzzer.triage import known
from fuzzer.triage.attribute import (
    KNOBS,
    Attribution,
    Knob,
    OutOfTime,
    RunnerPool,
    attribute,
    bisect_summary,
    knob_named,
    run_bisect,
    run_fresh,
)
from fuzzer.triage.signature import graph_dtype, same_cause, signature_fields, signature_of

Log = Callable[[str], None]
KNOB_NAMES = frozenset(k.name for k in KNOBS)
SUMMARY_RESERVE = 5.0  # seconds of --time kept for writing SUMMARY.md


def plain_log(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} nightly: {text}", flush=True)


@dataclass
class NightSettings:
    reports: Path = Path("reports")
    device: str = "cpu"
    seconds: float | None = None  # the whole night; fuzzing gets fuzz_share of it
    cases: int | None = None
    seed: int | None = None  # default: derived from the date and run number
    backend: str = "inductor"
    corpus: Path | None = None  # default: reports/corpus, shared by all nights
    grammar: str = "mixed"
    dtypes: tuple[str, ...] = ("float32", "bfloat16", "float16")
    workers: int = 1
    k: int = 3
    max_calls: int = 200
    minimize_seconds: float | None = 900
    max_findings: int = 20  # new case files minimized per night; the rest wait for the next
    max_drafts: int = 5  # new root causes drafted per night, strongest first; the rest wait
    known_file: Path = known.KNOWN_FILE  # known causes: counted as hits, never drafted
    bisect: bool = True
    knobs: tuple[str, ...] | None = None  # knobs to try besides the full set (signed over)
    date: str | None = None  # default: today (local time)
    timeout: float = 300
    fuzz_share: float = 0.7
    strategies: dict[str, float] | None = None  # campaign strategy weights (gen.strategy)
    engine: str = "local"  # or "ray": fuzz, minimize and triage on a Ray fleet's actors
    ray_address: str | None = None
    policy: str = "float64"  # oracle.POLICIES, for the night's campaign (cases carry their own)
    config: dict = field(default_factory=dict)  # Inductor options for the night's campaign
    surface: dict = field(default_factory=dict)  # execute.surface.Surface, likewise
    search: str = "random"  # corpus.guided.SEARCHES

    @property
    def corpus_dir(self) -> Path:
        return self.corpus or self.reports / "corpus"

    def knob_list(self) -> tuple[Knob, ...]:
        """Every knob, whatever ``knobs`` says: a cause signature is over the full set (``knobs``
        only names extra ones to show, such as a custom backend's)."""
        extra = tuple(knob_named(n) for n in self.knobs or () if n not in KNOB_NAMES)
        return KNOBS + extra


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
    raw_findings: dict = field(default_factory=dict)  # campaign findings by kind
    raw_counted: dict = field(default_factory=dict)  # weak flips and benign cases: not findings
    found: list[str] = field(default_factory=list)  # case files tonight's campaign reported
    rechecks: list[dict] = field(default_factory=list)
    backlog: int = 0
    stage_seconds: dict = field(default_factory=dict)  # wall time per stage (resumes add up)
    drafts_deferred: int = 0
    strategies: dict = field(default_factory=dict)  # name -> cases, findings, seconds
    harness_errors: int = 0  # numfuzz's own failures on a case or finding (corpus.harness)
    harness_messages: list[str] = field(default_factory=list)  # the first few
    stopped: str = ""  # why fuzzing stopped before its budget (the harness stop rule)

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

    def save(self, directory: Path) -> None:
        atomic_write(directory / "night.json", json.dumps(asdict(self), indent=1))


def night_of(summary: Path) -> Night:
    """The night a ``SUMMARY.md`` was written for (its ``night.json`` beside it)."""
    return Night(**json.loads((summary.parent / "night.json").read_text()))


def latest_night(reports: Path) -> Night | None:
    """The most recently started night under ``reports``, or None."""
    nights = []
    for path in reports.glob("*/night.json"):
        try:
            nights.append(Night(**json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            continue  # a foreign or half-written file is not a night
    return max(nights, key=lambda n: (n.started, n.date, n.run), default=None)


def open_night(settings: NightSettings, directory: Path, log: Log) -> Night:
    """Resume tonight's unfinished run, or start a new one."""
    path = directory / "night.json"
    run = 1
    if path.is_file():
        data = json.loads(path.read_text())
        if data.get("status") == "running":
            night = Night(**data)
            log(f"resuming night {night.id} at stage {night.stage}")
            return night
        run = int(data.get("run", 1)) + 1
        if (directory / "SUMMARY.md").exists():
            (directory / "SUMMARY.md").replace(directory / f"SUMMARY-{run - 1}.md")
    seed = settings.seed if settings.seed is not None else \
        int(directory.name.replace("-", "")) * 100 + run
    night = Night(date=directory.name, run=run, seed=seed)
    night.save(directory)
    log(f"night {night.id} starts: seed {seed}, reports in {directory}")
    return night


@dataclass
class Context:
    settings: NightSettings
    night: Night
    directory: Path
    store: Store
    pool: RunnerPool
    log: Log
    deadline: float | None = None
    fleet: Any = None  # the Ray fleet (corpus.fleet.Fleet) when the engine is ray

    def harness_error(self, stage: str, key: str, err: BaseException) -> None:
        """One finding's ``stage`` raised: count it, log it, keep it for replay; go on."""
        message = harness.error_verdict(stage, err).message
        self.night.harness_error(f"{key}: {message}")
        self.log(f"{key}: {message}")
        with contextlib.suppress(OSError):  # a full disk: counted all the same, saved later
            self.night.save(self.directory)
        harness.HarnessLog(self.settings.corpus_dir / harness.DIRECTORY).record(
            message, where={"night": self.night.id, "item": key},
            details=harness.traceback_text(err))

    def advance(self, stage: str) -> None:
        self.night.stage = stage
        self.night.save(self.directory)

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline


def run_night(settings: NightSettings, log: Log = plain_log,
              pool: RunnerPool | None = None) -> Path:
    """One night, resumable; returns the path of its ``SUMMARY.md``."""
    directory = settings.reports / (settings.date or time.strftime("%Y-%m-%d"))
    night = open_night(settings, directory, log)
    store = Store.in_reports(settings.reports)
    own = pool is None
    fleet = None
    if settings.engine == "ray":  # one fleet for the night: every stage sends work to it
        from fuzzer.corpus.fleet import start_fleet

        fleet = start_fleet(campaign_settings(settings, night), settings.ray_address)
    pool = pool or RunnerPool(timeout=settings.timeout, warmup=settings.backend == "inductor",
                              factory=fleet.runner if fleet else None, recycle=Recycle())
    ctx = Context(settings, night, directory, store, pool, log, fleet=fleet)
    try:
        return _stages(ctx)
    finally:
        if own:
            pool.close()
        if fleet is not None:
            fleet.close()
        store.close()


def _stages(ctx: Context) -> Path:
    """Fuzz, process, drafts, recheck, summary. After fuzzing, every stage shares what is left
    of ``--time`` and checks the deadline between items, so a night ends within its budget plus
    the one item in flight; what is left over is picked up by the next night."""
    night, s = ctx.night, ctx.settings
    start = time.monotonic()
    if night.stage == "fuzz":
        with _timed(ctx, "fuzz"):
            fuzz(ctx)
        ctx.advance("process")
    if s.seconds is not None:
        left = s.seconds - sum(night.stage_seconds.values())
        ctx.deadline = time.monotonic() + max(0.0, left - SUMMARY_RESERVE)
    if night.stage == "process":
        with _timed(ctx, "minimize + triage"):
            process(ctx)
        ctx.advance("drafts")
    if night.stage == "drafts":
        with _timed(ctx, "drafts"):
            write_pending_drafts(ctx)
        ctx.advance("recheck")
    if night.stage == "recheck":
        with _timed(ctx, "recheck"):
            results = recheck(ctx.store, ctx.pool, k=s.k, seen_before=night.started,
                              log=ctx.log, stop=ctx.out_of_time,
                              on_error=lambda sig, err: ctx.harness_error("recheck", sig, err))
        night.rechecks = [asdict(r) for r in results]
        ctx.advance("summary")
    path = write_summary(ctx)
    night.status = "done"
    ctx.advance("done")
    ctx.log(f"night {night.id} done in {time.monotonic() - start:.0f}s: {path}")
    return path


@contextlib.contextmanager
def _timed(ctx: Context, stage: str) -> Iterator[None]:
    start = time.monotonic()
    try:
        yield
    finally:
        seconds = ctx.night.stage_seconds
        seconds[stage] = round(seconds.get(stage, 0.0) + time.monotonic() - start, 1)
        ctx.night.save(ctx.directory)


# ------------------------------------------------------------------ fuzz


def fuzz(ctx: Context) -> None:
    """The campaign, on this machine's workers or on the night's Ray fleet."""
    from fuzzer.corpus.campaign import run_campaign

    s, night = ctx.settings, ctx.night
    spent = night.fuzz_seconds
    settings = campaign_settings(s, night)
    ctx.log(f"fuzzing: device={s.device} backend={s.backend} seed={night.seed} "
            f"budget={_budget(s.cases, settings.seconds)} corpus={s.corpus_dir}"
            + (" engine=ray" if ctx.fleet is not None else ""))
    counts = Counter(night.raw_findings)
    t0 = time.monotonic()
    hook_counted: list[int] = []  # harness errors this hook saw (it may fail on others itself)

    def on_outcome(outcome: Any) -> None:
        v = outcome.verdict
        night.cases += 1
        night.skipped += v.kind == "skip" and not harness.is_harness_error(v)
        row = night.strategies.setdefault(outcome.strategy,
                                          {"cases": 0, "findings": 0, "seconds": 0.0})
        row["cases"] += 1
        row["findings"] += v.is_finding
        row["seconds"] = round(row["seconds"] + outcome.seconds, 1)
        if harness.is_harness_error(v):
            hook_counted.append(outcome.index)
            night.harness_error(f"case {outcome.index}: {v.message}")
            ctx.log(f"case {outcome.index}: HARNESS ERROR ({v.message}); going on")
        if v.is_finding:
            counts[v.kind] += 1
            night.found.append(outcome.path.name)
            ctx.log(f"case {outcome.index}: {v.summary()} -> {outcome.path.name}")
        elif v.kind in COUNTED:
            night.raw_counted[v.kind] = night.raw_counted.get(v.kind, 0) + 1
        night.raw_findings = dict(counts)
        night.fuzz_seconds = round(spent + time.monotonic() - t0, 1)
        night.save(ctx.directory)

    if ctx.fleet is not None:
        from fuzzer.corpus.fleet import run_fleet

        summary, _ = run_fleet(settings, on_outcome=on_outcome, fleet=ctx.fleet)
    else:
        summary = run_campaign(settings, on_outcome=on_outcome)
    # The ledger is marked before a case is counted here: a kill between the two loses the count
    # of the case in flight, never the case, so the ledger has the night's total.
    night.cases = max(night.cases, summary.ledger_cases)
    missed = summary.harness_errors - len(hook_counted)  # failures of this hook, lost workers
    if missed > 0:
        night.harness_error(f"{missed} in the campaign itself: {summary.harness_messages[-1]}")
        night.harness_errors += missed - 1
    if summary.stopped:
        night.stopped = summary.stopped
        ctx.log(f"fuzzing {summary.stopped}; the rest of the night goes on")
    night.fuzz_seconds = round(spent + time.monotonic() - t0, 1)
    ctx.log(f"fuzzed {night.cases} cases in {night.fuzz_seconds:.0f}s; "
            f"raw findings: {dict(counts) or 'none'}")


def campaign_settings(s: NightSettings, night: Night) -> Any:
    """Tonight's campaign: after a kill it resumes tonight's case indices and remaining time."""
    from fuzzer.corpus.campaign import Settings

    seconds = None if s.seconds is None else max(1.0, s.seconds * s.fuzz_share -
                                                 night.fuzz_seconds)
    return Settings(out=s.corpus_dir, device=s.device, cases=s.cases, seconds=seconds,
                    seed=night.seed, grammar=s.grammar, dtypes=s.dtypes, workers=s.workers,
                    backend=s.backend, timeout=s.timeout, resume=night.cases > 0,
                    policy=s.policy, strategies=s.strategies, config=dict(s.config),
                    surface=dict(s.surface), search=s.search)


def _budget(cases: int | None, seconds: float | None) -> str:
    parts = ([f"{cases} cases"] if cases else []) + ([f"{seconds:.0f}s"] if seconds else [])
    return " or ".join(parts) or "unbounded"


# ------------------------------------------------------------------ process


def process(ctx: Context) -> None:
    """Every corpus case file: a hit if processed before, else the full pipeline, strongest
    first. A second pass picks up the slips the minimizer saved to the corpus during the first."""
    fresh = sum(1 for r in ctx.store.night_rows(ctx.night.id)
                if r["outcome"] != "recurring" and not r["outcome"].startswith("seen before"))
    for _ in range(2):
        fresh, backlog = _process_pass(ctx, fresh)
    ctx.night.backlog = backlog
    if backlog:
        ctx.log(f"{backlog} case files left for the next night (max findings / time)")


def _process_pass(ctx: Context, fresh: int) -> tuple[int, int]:
    found = set(ctx.night.found)
    pending = []
    for path in sorted(ctx.settings.corpus_dir.glob("*.pt"),
                       key=lambda p: (p.stat().st_mtime, p.name)):
        key = path.name
        if ctx.store.processed(ctx.night.id, key):
            continue
        earlier = ctx.store.earlier(key)
        if earlier is None:
            pending.append(path)
        elif key in found:
            _hit_again(ctx, key, earlier)
    backlog = 0
    for path in strongest_first(pending):  # only the new files are read to rank them
        if fresh >= ctx.settings.max_findings or ctx.out_of_time():
            backlog += 1
            continue
        fresh += 1
        backlog += not _process_one(ctx, path, path.name)
    return fresh, backlog


def strongest_first(files: list[Path]) -> list[Path]:
    """Most severe verdict first (``oracle.severity_key``), then oldest (the order given): when
    the night runs out of time, what is left for tomorrow is the weakest."""
    def rank(path: Path) -> tuple[int, int]:
        try:
            verdict = Case.load(path).verdict
        except CaseError:
            verdict = None
        return severity_key(verdict) if verdict is not None else (len(RANK) + 2, 0)

    return sorted(files, key=rank)


def _hit_again(ctx: Context, key: str, earlier: Any) -> None:
    """Tonight's campaign produced a case file an earlier night processed."""
    finding = ctx.store.get(earlier["signature"]) if earlier["signature"] else None
    if finding is None:
        ctx.store.mark_processed(ctx.night.id, key, f"seen before: {earlier['outcome']}")
        return
    finding.torch, finding.triton = _versions()
    ctx.store.record(finding, night=ctx.night.id, key=key)
    ctx.log(f"{key}: recurring {finding.signature} ({finding.title})")


def _versions() -> tuple[str, str]:
    found = versions()
    return found["torch"], found["triton"]


def _process_one(ctx: Context, path: Path, key: str) -> bool:
    """Minimize, triage and record one case file; False when the deadline cut it short (it
    stays unprocessed, for the next night)."""
    ctx.log(f"{key}: processing")
    try:
        case = Case.load(path)
    except CaseError as err:
        ctx.store.mark_processed(ctx.night.id, key, f"unreadable: {err}")
        return True
    if case.verdict is None or not case.verdict.is_finding:
        ctx.store.mark_processed(ctx.night.id, key, "not a finding")
        return True
    try:
        minimized, reliability, note = _minimize(ctx, case)
        if note:
            _not_reproducible(ctx, key, note)
            return True
        attribution = attribute(minimized, ctx.pool, ctx.settings.knob_list(), k=ctx.settings.k,
                                stop=ctx.out_of_time)
        _record(ctx, key, minimized, attribution, reliability, sighting(case))
    except OutOfTime as err:  # not processed: the next night starts it again
        ctx.log(f"{key}: left for the next night: {err}")
        return False
    except Exception as err:  # one bad case must not end the night
        ctx.harness_error("processing", key, err)
        ctx.store.mark_processed(ctx.night.id, key, f"error: {type(err).__name__}: {err}"[:500])
    return True


def _not_reproducible(ctx: Context, key: str, note: str) -> None:
    ctx.log(f"{key}: not reproducible: {note}")
    ctx.store.mark_processed(ctx.night.id, key, f"not reproducible: {note}"[:500])


def _minimize(ctx: Context, case: Case) -> tuple[Case, tuple[int, int] | None, str]:
    """The minimized case, its k/k, and a note when it does not reproduce. Timeouts are kept
    whole (every minimizer call would wait the full timeout)."""
    from fuzzer.reduce.minimize import NotReproducible, minimize

    if case.verdict.kind == "timeout":
        return case, None, ""
    s = ctx.settings
    seconds = s.minimize_seconds
    if ctx.deadline is not None:  # never past the night's deadline
        left = max(1.0, ctx.deadline - time.monotonic())
        seconds = left if seconds is None else min(seconds, left)
    try:
        result = minimize(case, ctx.pool.get(case.device), k=s.k, max_calls=s.max_calls,
                          seconds=seconds, corpus=s.corpus_dir,
                          progress=lambda text: ctx.log(f"  minimize: {text}"))
    except NotReproducible as err:
        return case, None, str(err)
    ctx.log(f"  minimized {result.original_ops} -> {result.final_ops} ops in {result.calls} "
            f"calls, {result.seconds:.0f}s, reliability {result.reliability[0]}/"
            f"{result.reliability[1]}")
    return result.case, result.reliability, ""


def sighting(case: Case) -> tuple[str, str]:
    """The head and the graph a raw (not yet minimized) case found its cause through."""
    verdict = case.verdict
    node = case.graph.node(verdict.node) if verdict and verdict.node in case.graph.g else None
    head = ops.label(node["op"], node["attrs"]) if node else (verdict.kind if verdict else "?")
    return head, readable_chain(case.graph)


def finding_for(case: Case, attribution: Attribution | None,
                reliability: tuple[int, int] | None) -> Finding:
    torch_version, triton_version = _versions()
    return Finding(
        signature=signature_of(signature_fields(case, attribution)), kind=case.verdict.kind,
        device=case.device.split(":")[0], dtype=graph_dtype(case),
        op_chain=" ".join(op_chain(case.graph)), output=draft.output_label(case.verdict),
        title=draft.title_for(case), summary=case.verdict.summary(),
        distance_ulps=draft.distance_ulps(case.verdict), reliability=reliability,
        torch=torch_version, triton=triton_version,
        attribution=attribution.to_dict() if attribution else {})


def _record(ctx: Context, key: str, case: Case, attribution: Attribution,
            reliability: tuple[int, int] | None, seen: tuple[str, str]) -> None:
    """A known cause is a hit on its entry; else a hit on the root cause it is (or nearly is,
    ``same_cause``), or a new one. The smallest repro among a cause's members is kept."""
    fields = signature_fields(case, attribution)
    entry = known.match(fields, known.entries(ctx.settings.known_file))
    if entry is not None:
        ctx.store.record_known(entry.id, ctx.night.id, key)
        ctx.log(f"{key}: known cause {entry.id}: {entry.what}")
        return
    finding = finding_for(case, attribution, reliability)
    merged = next((f for f in ctx.store.findings() if f.signature != finding.signature
                   and (c := ctx.store.cause(f.signature)) and same_cause(c, fields)), None)
    if merged is not None:
        finding.signature = merged.signature
    case_dir = ctx.settings.reports / "findings" / finding.signature
    kept = case_dir / "case.pt"
    if not kept.exists() or _smaller(case, kept):
        case.save(kept)
    finding.case_path = str(kept)
    new = ctx.store.record(finding, night=ctx.night.id, key=key, cause=fields, sighting=seen)
    ctx.log(f"{key}: {'NEW' if new else 'recurring'} {finding.signature}: {finding.title}; "
            f"{attribution.summary()}")


def _smaller(case: Case, kept: Path) -> bool:
    from fuzzer.reduce.minimize import size_key

    try:
        return size_key(case) < size_key(Case.load(kept))
    except CaseError:
        return True


# ------------------------------------------------------------------ drafts


def write_pending_drafts(ctx: Context) -> None:
    """A draft for every open finding that has none yet (new signatures; a killed night's too)."""
    env_file = ctx.directory / "collect_env.txt"
    written = sum(1 for f in ctx.store.findings() if f.draft_path
                  and Path(f.draft_path).parent == ctx.directory)
    pending = [f for f in draft.ranked(ctx.store.findings(status="open"))
               if f.draft_path is None or not Path(f.draft_path).exists()]
    for i, finding in enumerate(pending):
        if written >= ctx.settings.max_drafts or ctx.out_of_time():
            ctx.night.drafts_deferred = len(pending) - i
            ctx.log(f"{len(pending) - i} drafts wait for the next night (max drafts / time)")
            return
        written += 1
        path = ctx.directory / f"{finding.signature}.md"
        mine = finding.draft_path == str(path) and not path.exists()
        if finding.draft_path is None:
            mine = ctx.store.claim_draft(finding.signature, str(path))
        if not mine:
            continue
        try:
            write_draft_for(ctx, finding, path, env_file)
        except Exception as err:  # the draft is retried by the next resume or night
            ctx.harness_error("drafting", finding.signature, err)


def write_draft_for(ctx: Context, finding: Finding, path: Path, env_file: Path) -> Path:
    from fuzzer.reduce.repro import write_repro

    case = Case.load(finding.case_path)
    attribution = Attribution.from_dict(finding.attribution)
    if ctx.settings.bisect and attribution is not None and attribution.bisect is None \
            and not ctx.out_of_time():
        ctx.log(f"bisecting {finding.signature}")
        attribution.bisect = run_bisect(case)
        ctx.log(f"  bisector: {bisect_summary(attribution.bisect)}")
        ctx.store.update(finding.signature, attribution=attribution.to_dict())
    repro = write_repro(case, Path(finding.case_path).parent)
    ctx.log(f"running {repro}")
    result = draft.run_repro(repro)
    ctx.store.update(finding.signature, repro_path=str(repro))
    finding = ctx.store.get(finding.signature)
    text = draft.render_draft(finding, case, attribution, repro.read_text(), result,
                              draft.collect_env_cached(env_file), path,
                              ctx.store.sightings(finding.signature))
    draft.write_draft(path, text)
    ctx.log(f"draft {path} ({finding.title})")
    return path


# ------------------------------------------------------------------ recheck


@dataclass
class Recheck:
    signature: str
    title: str
    before: str
    after: str
    reproduced: int
    k: int
    message: str = ""


def recheck(store: Store, pool: RunnerPool, *, k: int = 3, seen_before: str | None = None,
            log: Log | None = None, stop: Callable[[], bool] | None = None,
            on_error: Callable[[str, BaseException], None] | None = None) -> list[Recheck]:
    """Replay open (and flaky) findings k times on the installed torch: k/k stays open, 0/k with
    every run clean is fixed (``fixed_in`` = this torch), anything between is flaky. ``stop``
    ends it early (the night's deadline); the rest are rechecked another night. A finding whose
    recheck raises keeps its status and goes to ``on_error`` (signature, error)."""
    results = []
    for finding in store.findings():
        if finding.status == "fixed":
            continue
        if stop is not None and stop():
            if log:
                log("recheck stopped at the deadline")
            break
        if seen_before is not None and finding.last_seen >= seen_before:
            continue  # seen tonight: it just reproduced
        try:
            result = _recheck_one(store, pool, finding, k)
        except Exception as err:  # one finding's failure is its own, never the recheck's
            if on_error is not None:
                on_error(finding.signature, err)
            elif log:
                log(f"recheck {finding.signature}: harness error: {type(err).__name__}: {err}")
            continue
        if log:
            log(f"recheck {finding.signature}: {result.before} -> {result.after} "
                f"({result.reproduced}/{k}) {result.message}".rstrip())
        results.append(result)
    return results


def _recheck_one(store: Store, pool: RunnerPool, finding: Finding, k: int) -> Recheck:
    import torch

    result = Recheck(finding.signature, finding.title, finding.status, finding.status, 0, k)
    try:
        case = Case.load(finding.case_path or "")
    except CaseError as err:
        result.message = f"cannot load the case: {err}"
        return result
    if case.device.startswith("cuda") and not torch.cuda.is_available():
        result.message = "needs CUDA; not rechecked here"
        return result
    verdicts = [run_fresh(pool.get(case.device), case) for _ in range(k)]
    result.reproduced = sum(same_divergence(case.verdict, v) for v in verdicts)
    if result.reproduced == k:
        result.after = "open"
    elif result.reproduced:
        result.after = "flaky"
    elif all(not v.is_finding and v.kind != "skip" for v in verdicts):
        result.after = "fixed"  # ok, or compiled now no worse than eager
    else:
        kinds = ", ".join(sorted({v.kind for v in verdicts}))
        result.message = f"does not reproduce but is not clean either ({kinds}); status kept"
        return result
    fixed_in = str(torch.__version__) if result.after == "fixed" else None
    store.set_status(finding.signature, result.after, reliability=(result.reproduced, k),
                     fixed_in=fixed_in)
    return result


# ------------------------------------------------------------------ summary


def write_summary(ctx: Context) -> Path:
    return atomic_write(ctx.directory / "SUMMARY.md", summary_text(ctx))


def summary_text(ctx: Context) -> str:
    night, store = ctx.night, ctx.store
    rows = list(store.night_rows(night.id))
    new = draft.ranked([f for r in rows if r["outcome"] == "new"
                        if (f := store.get(r["signature"]))])
    recurring = [f for sig in dict.fromkeys(r["signature"] for r in rows
                                            if r["outcome"] == "recurring")
                 if (f := store.get(sig))]
    other = [r for r in rows if r["outcome"] not in ("new", "recurring")]
    torch_version, triton_version = _versions()
    parts = [f"# numfuzz nightly {night.date} (run {night.run})", "",
             f"torch {torch_version}, triton {triton_version}; device {ctx.settings.device}, "
             f"backend {ctx.settings.backend}, seed {night.seed}; started {night.started}, "
             f"summary written {now()}.", "", *_health(ctx),
             *_throughput(night), *_causes(ctx, new, recurring), *_new_section(ctx, new),
             *_known_section(ctx, store.known_hits(night.id)), *_recurring_section(recurring),
             *_recheck_section(night.rechecks), *_crash_section(night, new + recurring),
             *_other_section(other, night.backlog, night.drafts_deferred),
             *_stage_section(ctx)]
    return "\n".join(parts) + "\n"


def _health(ctx: Context) -> list[str]:
    """First thing a reader sees: was this a clean night, and if not, where to look."""
    night = ctx.night
    folder = ctx.settings.corpus_dir / harness.DIRECTORY
    if not night.harness_errors and not night.stopped:
        return ["**Clean night**: no harness errors.", ""]
    lines = [f"## Harness errors: {night.harness_errors}", "",
             "numfuzz's own failures (not findings); each case or finding is saved for replay "
             f"in `{folder}`, and the night went on."]
    if night.stopped:
        lines += ["", f"**Fuzzing {night.stopped}.**"]
    lines += ["", *(f"- {m}" for m in night.harness_messages)]
    return lines + [""]


def _causes(ctx: Context, new: list[Finding], recurring: list[Finding]) -> list[str]:
    fixed = sum(r["after"] == "fixed" for r in ctx.night.rechecks)
    known_hits = sum(ctx.store.known_hits(ctx.night.id).values())
    counted = ", ".join(f"{k}: {n}" for k, n in sorted(ctx.night.raw_counted.items())) or "none"
    return ["## Root causes", "", "| new | known (not drafted) | recurring | fixed |",
            "|---|---|---|---|", f"| {len(new)} | {known_hits} hits | {len(recurring)} | "
            f"{fixed} |", "", f"Not findings (counted, not saved): {counted}.", ""]


def _known_section(ctx: Context, hits: dict[str, int]) -> list[str]:
    lines = [f"## Known causes: {sum(hits.values())} hits", ""]
    if not hits:
        return lines + ["None tonight.", ""]
    entries = {e.id: e for e in known.entries(ctx.settings.known_file)}
    lines += ["| known cause | hits | what upstream says |", "|---|---|---|"]
    for entry_id, n in hits.items():
        entry = entries.get(entry_id)
        what = f"{entry.what} ({', '.join(entry.urls)})" if entry else ""
        lines.append(f"| `{entry_id}` | {n} | {what} |")
    return lines + [""]


def _stage_section(ctx: Context) -> list[str]:
    s, seconds = ctx.settings, ctx.night.stage_seconds
    budget = f"{s.seconds:.0f}s" if s.seconds is not None else "none"
    lines = [f"## Time per stage (budget {budget}; fuzzing gets {s.fuzz_share:.0%})", "",
             "| stage | seconds |", "|---|---|"]
    lines += [f"| {stage} | {t:.0f} |" for stage, t in seconds.items()]
    return lines + [f"| total | {sum(seconds.values()):.0f} |", ""]


def _throughput(night: Night) -> list[str]:
    rate = 60.0 * night.cases / night.fuzz_seconds if night.fuzz_seconds else 0.0
    kinds = ", ".join(f"{k}: {n}" for k, n in sorted(night.raw_findings.items())) or "none"
    return ["## Throughput", "", "| cases fuzzed | cases/min | fuzzing time | skipped | "
            "raw findings |", "|---|---|---|---|---|",
            f"| {night.cases} | {rate:.1f} | {night.fuzz_seconds:.0f}s | {night.skipped} | "
            f"{kinds} |", "", *_strategy_rows(night)]


def _strategy_rows(night: Night) -> list[str]:
    """Where the fuzzing time went (``--strategy NAME=WEIGHT`` to change it)."""
    if not night.strategies:
        return []
    lines = ["| strategy | cases | raw findings | worker seconds |", "|---|---|---|---|"]
    lines += [f"| {name} | {row['cases']} | {row['findings']} | {row['seconds']:.0f} |"
              for name, row in sorted(night.strategies.items())]
    return lines + [""]


def _new_section(ctx: Context, new: list[Finding]) -> list[str]:
    lines = [f"## New findings: {len(new)}", ""]
    if not new:
        return lines + ["None tonight.", ""]
    lines += ["Ranked: non-finite, then flips far from their boundary, then the rest. Each "
              "draft was generated by numfuzz; a person must check it before filing.", "",
              "| # | signature | title | reliability | draft |", "|---|---|---|---|---|"]
    for i, f in enumerate(new, 1):
        rel = f"{f.reliability[0]}/{f.reliability[1]}" if f.reliability else "-"
        link = f"[{Path(f.draft_path).name}]({Path(f.draft_path).name})" if f.draft_path else "-"
        lines.append(f"| {i} | `{f.signature}` | {f.title} | {rel} | {link} |")
    lines += ["", "To file one after checking it (numfuzz never files anything):", ""]
    lines += [f"    {draft.gh_command(f.title, Path(f.draft_path))}" for f in new if f.draft_path]
    return lines + [""]


def _recurring_section(recurring: list[Finding]) -> list[str]:
    lines = [f"## Recurring: {len(recurring)}", ""]
    if not recurring:
        return lines + ["None.", ""]
    lines += ["| signature | title | hits | first seen | status |", "|---|---|---|---|---|"]
    lines += [f"| `{f.signature}` | {f.title} | {f.hits} | {f.first_seen} | {f.status} |"
              for f in recurring]
    return lines + [""]


def _recheck_section(rechecks: list[dict]) -> list[str]:
    fixed = [r for r in rechecks if r["after"] == "fixed"]
    flaky = [r for r in rechecks if r["after"] == "flaky"]
    lines = [f"## Fixed: {len(fixed)} (of {len(rechecks)} open findings rechecked)", ""]
    lines += [f"- `{r['signature']}` {r['title']}: 0/{r['k']} on this torch" for r in fixed]
    if flaky:
        lines += ["", f"Flaky now: {len(flaky)}"]
        lines += [f"- `{r['signature']}` {r['title']}: {r['reproduced']}/{r['k']}" for r in flaky]
    notes = [r for r in rechecks if r["message"]]
    lines += [f"- `{r['signature']}`: {r['message']}" for r in notes]
    return lines + [""]


def _crash_section(night: Night, findings: list[Finding]) -> list[str]:
    raw = sum(n for k, n in night.raw_findings.items() if k in ("crash", "timeout"))
    crashes = [f for f in findings if f.kind in ("crash", "timeout")]
    lines = [f"## Crashes and timeouts: {raw} raw, {len(crashes)} signatures", ""]
    lines += [f"- `{f.signature}` {f.title}: {f.summary}" for f in crashes]
    return lines + [""]


def _other_section(other: list[Any], backlog: int, deferred: int) -> list[str]:
    other = [r for r in other if not r["outcome"].startswith("known: ")]
    lines = [f"## Not reproducible, errors, skipped: {len(other)}", ""]
    lines += [f"- {r['key']}: {r['outcome']}" for r in other]
    if backlog:
        lines += ["", f"{backlog} case files wait for the next night (max findings / time)."]
    if deferred:
        lines += ["", f"{deferred} drafts wait for the next night (max drafts / time)."]
    return lines + [""]

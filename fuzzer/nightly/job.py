"""The nightly job: fuzz, minimize what is new, triage, store, draft, recheck, summarize.

What cron runs (``numfuzz nightly --device auto --time 6h --reports reports/``). One night lives in
``reports/<date>/``: ``night.json`` says which stage it reached, so a killed night started again on
the same date resumes there (the campaign resumes its own case indices; the store's ``processed``
table says which case files are done, written in the same transaction as their hit). A night that
finished and is started again on the same date is a new run (``<date>#2``) with a fresh seed.

Stages: fuzz (a campaign, on the night's one engine, ``campaign.engine``; with ``--time``, in
the first ``fuzz_share`` of the budget; on the local engine its worker threads are the night's
lanes, ``nightly.lanes``, which process raw findings beside it as the backlog asks); process
(``nightly.pipeline``: every lane drains the backlog, ``nightly.backlog``: one representative per
bucket minimized, attributed and recorded under its cause signature, the other members checked
against it) and drafts (``nightly.drafts``: one per new root cause); recheck
(``nightly.recheck``: open causes not seen tonight, replayed k times on the installed torch);
``SUMMARY.md`` (``nightly.summary``). Night state and settings: ``nightly.night``.
After fuzzing, the stages share what is left of ``--time``: they check the deadline between
items, and every run, subprocess and bisector in flight at the deadline is cut there
(``Context.runners``, ``pipeline``), so the night ends within its budget; what is left over
waits for the next night. Minimizing and triaging leave the time the drafts they owe need.

Nothing one case or one finding does ends the night: any exception while fuzzing a case or while
minimizing, triaging, drafting or rechecking a finding is a harness error of that item
(``campaign.harness``): counted in ``night.json``, logged, saved under ``<corpus>/harness/`` and
listed in SUMMARY.md, and the night goes on. The fuzzing stage stops early only by the harness
stop rule; the rest of the night still runs. Log lines are plain text with a timestamp; the exit
status (``Night.exit_status``) is 0 for a clean night, 1 for one that ran to its end with harness
errors, 2 for one whose fuzzing stopped early.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

from fuzzer import clock
from fuzzer.campaign import harness
from fuzzer.campaign.arms import Plan
from fuzzer.campaign.engine import Engine
from fuzzer.campaign.loop import Outcome
from fuzzer.campaign.settings import worker_env
from fuzzer.execute.pool import OutOfTime, RunnerPool
from fuzzer.execute.workers import LocalRunner, Recycle
from fuzzer.judge.kinds import COUNTED, Kind
from fuzzer.nightly.drafts import write_pending_drafts
from fuzzer.nightly.lanes import Lanes, process
from fuzzer.nightly.night import Context, Log, NightSettings, Spent, open_night, plain_log
from fuzzer.nightly.recheck import recheck
from fuzzer.nightly.summary import causes_line, write_summary
from fuzzer.report import dashboard
from fuzzer.report.store import Store

SUMMARY_RESERVE = 5.0  # seconds of --time kept for writing SUMMARY.md


def run_night(settings: NightSettings, log: Log = plain_log,
              pool: RunnerPool | None = None) -> Path:
    """One night, resumable; returns the path of its ``SUMMARY.md``."""
    directory = settings.reports / (settings.date or time.strftime("%Y-%m-%d"))
    night = open_night(settings, directory, log)
    store = Store.in_reports(settings.reports)
    if night.stage == "fuzz" and not night.plan:  # decided once, kept for a resumed night
        plan = settings.plan_from(store, night)
        if plan is not None:
            night.plan = plan.to_dict()
            night.save(directory)
            log(f"plan: {len(plan.shares)} arms over {', '.join(plan.surfaces())}; "
                f"largest shares {_largest(plan)}")
    own = pool is None
    # one engine for the night: on ray, one fleet every stage sends work to
    engine = Engine.of(settings.engine, settings.night_campaign(night), settings.ray_address,
                       start=True)
    campaign = settings.campaign
    pool = pool or RunnerPool(timeout=campaign.timeout, warmup=campaign.recipe.warms_up,
                              factory=engine.runner, recycle=Recycle(),
                              base_env=worker_env(campaign))
    ctx = Context(settings, night, directory, store, pool, log, engine=engine)
    try:
        return _stages(ctx)
    finally:
        if own:
            pool.close()
        engine.close()
        store.close()


def _stages(ctx: Context) -> Path:
    """Fuzz, process, drafts, recheck, summary. After fuzzing, every stage shares what is left
    of ``--time`` and checks the deadline between items, so a night ends within its budget plus
    the one item in flight; what is left over is picked up by the next night."""
    night, s = ctx.night, ctx.settings
    start = clock.now()
    # The night's lanes over its backlog: on the local engine the campaign's workers, which
    # process raw findings beside it; on a fleet one lane, after it.
    night.workers = s.campaign.workers if ctx.engine.name == "local" else 1
    lanes = Lanes(ctx, night.workers)
    if night.stage == "fuzz":
        _set_deadline(ctx)  # the lanes process beside the campaign, by the night's deadline
        with _timed(ctx, "fuzz"):  # and, on the local engine, processing beside it
            fuzz(ctx, lanes.between if ctx.engine.name == "local" else None)
        ctx.advance("process")
    _set_deadline(ctx)
    if night.stage == "process":
        with _timed(ctx, "minimize + triage"):
            process(ctx, lanes)
        if lanes.backlog.buckets:  # a night resumed past its processing keeps what it saved
            night.buckets = lanes.backlog.rows()
        ctx.advance("drafts")
    if night.stage == "drafts":
        with _timed(ctx, "drafts"):
            write_pending_drafts(ctx)
        ctx.advance("recheck")
    if night.stage == "recheck":
        with _timed(ctx, "recheck"):
            results = recheck(ctx.store, ctx.runners(), k=s.k, seen_before=night.started,
                              log=ctx.log, stop=ctx.out_of_time,
                              on_error=lambda sig, err: _recheck_error(ctx, sig, err))
        night.rechecks = results
        ctx.advance("summary")
    path = write_summary(ctx)
    night.status = "done"
    ctx.advance("done")
    _write_dashboard(ctx)
    ctx.log(f"night {night.id} done in {clock.now() - start:.0f}s: {causes_line(ctx)}; "
            f"{path}")
    return path


def _write_dashboard(ctx: Context) -> None:
    """The team's page over every night (``report.dashboard``), rewritten after each; a page
    that cannot be drawn (no matplotlib, a disk error) is said in the log and costs nothing
    else: SUMMARY.md and the store already hold the night."""
    try:
        ctx.log(f"dashboard: {dashboard.write(ctx.settings.reports)}")
    except Exception as err:  # noqa: BLE001 (the night is done; its page is a convenience)
        ctx.log(f"dashboard not written: {type(err).__name__}: {err}")


def _set_deadline(ctx: Context) -> None:
    """The night's deadline: what ``--time`` leaves after the stages so far, less the summary's
    reserve (none without ``--time``)."""
    s = ctx.settings
    if s.seconds is not None:
        left = s.seconds - sum(ctx.night.stage_seconds.values())
        ctx.deadline = clock.now() + max(0.0, left - SUMMARY_RESERVE)


def _recheck_error(ctx: Context, signature: str, err: BaseException) -> None:
    """A recheck cut by the deadline is not a harness error: that cause is rechecked another
    night (the recheck stops at the deadline before the next one)."""
    if isinstance(err, OutOfTime):
        ctx.log(f"recheck {signature}: cut at the deadline; rechecked another night")
        return
    ctx.harness_error("recheck", signature, err)


@contextlib.contextmanager
def _timed(ctx: Context, stage: str) -> Iterator[None]:
    """Add the stage's time (on the budget clock, ``fuzzer.clock``: wall time) to the night's;
    while it runs, every save of the night records that it is in flight, so a kill loses none
    of it (``Night.count_interrupted``)."""
    night = ctx.night
    night.timed_stage, night.stage_since = stage, time.time()
    night.save(ctx.directory)
    start = clock.now()
    try:
        yield
    finally:
        seconds = night.stage_seconds
        seconds[stage] = round(seconds.get(stage, 0.0) + clock.now() - start, 1)
        night.timed_stage, night.stage_since = "", 0.0
        night.save(ctx.directory)


# ------------------------------------------------------------------ fuzz


def fuzz(ctx: Context, between: Callable[[int, LocalRunner], None] | None = None) -> None:
    """The campaign, on this machine's workers or on the night's Ray fleet; ``between``: what
    each local worker thread does between two cases (the lanes' processing)."""

    s, night = ctx.settings, ctx.night
    spent = night.fuzz_seconds
    settings = s.night_campaign(night)
    ctx.log(f"fuzzing: device={settings.device} backend={settings.recipe.backend} "
            f"seed={night.seed} budget={_budget(settings.cases, settings.seconds)} "
            f"corpus={s.corpus_dir}"
            + (f" engine={ctx.engine.name}" if ctx.engine.name != "local" else ""))
    counts = Counter(night.raw_findings)
    t0 = clock.now()
    hook_counted: list[int] = []  # harness errors this hook saw (it may fail on others itself)

    def on_outcome(outcome: Outcome) -> None:
        with ctx.lock:  # the lanes write the night's record too
            counted(outcome)

    def counted(outcome: Outcome) -> None:
        v = outcome.verdict
        night.cases += 1
        night.skipped += v.kind == Kind.SKIP and not harness.is_harness_error(v)
        for table, key in ((night.strategies, outcome.strategy), (night.arms, outcome.arm)):
            if key:
                table.setdefault(key, Spent()).add(v.is_finding, outcome.seconds)
        if harness.is_harness_error(v):
            hook_counted.append(outcome.index)
            night.harness_error(f"case {outcome.index}: {v.message}")
            ctx.log(f"case {outcome.index}: HARNESS ERROR ({v.message}); going on")
        if v.is_finding:
            # a finding's case file is written (``loop.kept``; failing that, a harness error)
            assert outcome.path is not None
            counts[str(v.kind)] += 1
            night.found.append(outcome.path.name)
            ctx.log(f"case {outcome.index}: {v.summary()} -> {outcome.path.name}")
        elif v.kind in COUNTED:
            night.raw_counted[str(v.kind)] = night.raw_counted.get(str(v.kind), 0) + 1
        night.raw_findings = dict(counts)
        night.fuzz_seconds = round(spent + clock.now() - t0, 1)
        night.save(ctx.directory)

    summary = ctx.engine.run(settings, on_outcome=on_outcome, between=between)
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
    night.fuzz_seconds = round(spent + clock.now() - t0, 1)
    # what the next night's plan reads
    ctx.store.record_arms(night.id, {arm: asdict(spent) for arm, spent in night.arms.items()})
    ctx.log(f"fuzzed {night.cases} cases in {night.fuzz_seconds:.0f}s; "
            f"raw findings: {dict(counts) or 'none'}")


def _largest(plan: Plan) -> str:
    top = sorted(plan.shares.items(), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{arm} {share:.0%}" for arm, share in top)


def _budget(cases: int | None, seconds: float | None) -> str:
    parts = ([f"{cases} cases"] if cases else []) + ([f"{seconds:.0f}s"] if seconds else [])
    return " or ".join(parts) or "unbounded"

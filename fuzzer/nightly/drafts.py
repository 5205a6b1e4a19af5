"""The nightly's drafts: a draft for every new root cause, strongest first.

Root causes without a draft and not recorded upstream, in ranking order (``report.ranking``), at
most ``max_drafts`` a night: with ``--confirm-with``, first the minimized repro under each other
torch (``confirmed``: drafted only when present on every one; absent on a newer torch, recorded
as fixed upstream there); the plain reproducer (checked, and run in a fresh interpreter), the
bisector when time allows, ``reports/<date>/<signature>.md`` (``report.draft``), and upstream's
side (``report.upstream.appendix``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fuzzer.corpus.case import Case, versions
from fuzzer.corpus.files import atomic_write
from fuzzer.execute import memcheck
from fuzzer.execute.pool import OutOfTime
from fuzzer.judge.kinds import Kind
from fuzzer.nightly.night import Confirmed, Context, Drafting
from fuzzer.reduce.snippet import Plain, plain_repro
from fuzzer.report import draft, environment, ranking, tlparse, upstream
from fuzzer.report.store import Finding
from fuzzer.triage import confirm, ledger
from fuzzer.triage.attribute import Attribution, bisect_summary, run_bisect

BISECT_MIN = 60.0  # seconds the bisector needs to be worth starting
SNIPPET_TIMEOUT = 300.0  # the plain reproducer's run: a fresh interpreter and one compile


def write_pending_drafts(ctx: Context) -> None:
    """A draft for every open finding that has none yet (new signatures; a killed night's too),
    strongest first, while the night has time (the processing stage left it for them)."""
    env_file = ctx.directory / "collect_env.txt"
    written = sum(1 for f in ctx.store.findings() if f.draft_path
                  and Path(f.draft_path).parent == ctx.directory)
    # A cause filed or wontfix upstream, or fixed on a newer torch, needs no draft.
    pending = [f for f in ranking.ranked(ctx.store.findings(status="open")) if f.awaits_draft]
    for i, finding in enumerate(pending):
        if written >= ctx.settings.max_drafts or ctx.out_of_time():
            ctx.night.drafts_deferred = len(pending) - i
            ctx.log(f"{len(pending) - i} drafts wait for the next night (max drafts / time)")
            return
        try:
            if not confirmed(ctx, finding):
                continue
        except Exception as err:  # confirmed by the next resume or night
            ctx.harness_error("confirming", finding.signature, err)
            continue
        written += 1
        path = ctx.directory / f"{finding.signature}.md"
        # Tonight's claim not yet written is ours to finish; no claim, or an earlier night's
        # that was never written (killed, or the write failed), is claimed for tonight.
        mine = finding.draft_path == str(path) or ctx.store.claim_draft(
            finding.signature, str(path), previous=finding.draft_path)
        if not mine:
            continue
        after = min(len(pending) - i, ctx.settings.max_drafts - written + 1) - 1
        try:
            write_draft_for(ctx.drafting(), finding, path, env_file, after)
        except Exception as err:  # the draft is retried by the next resume or night
            ctx.harness_error("drafting", finding.signature, err)
        ctx.checkpoint()


def confirmed(ctx: Context, finding: Finding) -> bool:
    """Before a cause is drafted, its minimized repro runs under each ``--confirm-with`` torch
    (``triage.confirm``): drafted only when it reproduces on every one. Absent on a newer torch
    than this one: fixed upstream there, recorded in the store (never drafted), counted; absent
    on an older one, or not run there: held back tonight, and SUMMARY.md says why. A resumed
    night keeps what it confirmed before the kill."""
    if not ctx.settings.confirm_with:
        return True
    earlier = [c for c in ctx.night.confirmed if c.signature == finding.signature]
    if earlier:
        return earlier[-1].drafted
    assert finding.case_path is not None  # the nightly records a finding with its kept case
    case = Case.load(finding.case_path)
    pythons = ctx.settings.confirm_with
    ctx.log(f"confirming {finding.signature} on torch {', '.join(p.torch for p in pythons)}")
    runs = confirm.confirm_case(case, pythons, min(confirm.CONFIRM_TIMEOUT, ctx.left()))
    decision = confirm.decide(runs)
    ctx.store.record_confirmations(finding.signature, runs, decision.fixed_in)
    ctx.night.confirmed.append(Confirmed(finding.signature, finding.title,
                                         [r.to_dict() for r in runs], decision.drafted,
                                         decision.fixed_in, decision.why))
    ctx.checkpoint()  # what was confirmed survives a kill, as the store's record does
    ctx.log(f"  {finding.signature}: {decision.why}"
            + ("" if decision.drafted else "; not drafted"))
    return decision.drafted


def write_draft_for(at: Drafting, finding: Finding, path: Path, env_file: Path,
                    after: int = 0) -> Path:
    """One draft: the full repro.py beside the kept case, the plain reproducer (checked, and
    run in a fresh interpreter), the bisector with the time beyond what the ``after`` drafts
    still to come need, collect_env; all within the night's deadline. The store learns the
    draft's title, the repro's path and the bisector's answer once, as the draft is written."""
    from fuzzer.reduce.repro import write_repro

    assert finding.case_path is not None  # the nightly records a finding with its kept case
    case = Case.load(finding.case_path)
    attribution = Attribution.from_dict(finding.attribution)
    repro = write_repro(case, Path(finding.case_path).parent)
    plain = _plain(at, case, finding.signature)
    trace = at.directory / f"{finding.signature}.trace"
    printed = _run_plain(at, case, plain, finding.signature, trace)
    report = tlparse.render(trace, at.directory / f"{finding.signature}.tlparse") \
        if at.left() > tlparse.TIMEOUT else None
    # Versions before the bisector, which may take all the time the night has left.
    env = environment.collect_env_cached(
        env_file, timeout=max(1.0, min(environment.ENV_TIMEOUT, at.left())))
    _bisect(at, case, attribution, finding.signature, after)
    confirmations = at.store.confirmations(finding.signature) \
        if at.confirmed else None  # tonight's, not an earlier night's
    refound = ledger.named(finding.ledger) if finding.ledger else None
    cause = draft.Cause(finding, case, attribution, plain, printed, env,
                        at.store.sightings(finding.signature), repro, confirmations,
                        trace if trace.is_dir() else None, report,
                        variants=at.store.variants(finding.signature),
                        ledger_note=refound.draft_note() if refound else "")
    title = cause.title
    at.store.update(finding.signature, repro_path=str(repro), title=title,
                     **({"attribution": attribution.to_dict()} if attribution else {}))
    cause.finding = replace(finding, title=title, repro_path=str(repro))
    # Upstream's side, after the body: a known fix this torch holds, duplicates found so far.
    text = draft.render_draft(cause, path) + upstream.appendix(
        at.store, cause.finding, at.known_file, versions()["torch"])
    draft.write_draft(path, text)
    at.log(f"draft {path} ({title})")
    return path


def _plain(at: Drafting, case: Case, signature: str) -> Plain:
    """The plain reproducer, its seeded inputs checked on a worker while the night has time
    (else the inputs file it is)."""
    try:
        return plain_repro(case, at.runners().get(case.device), at.directory, signature)
    except OutOfTime:
        return plain_repro(case, None, at.directory, signature)


def _run_plain(at: Drafting, case: Case, plain: Plain, signature: str, trace: Path
               ) -> tuple[int | None, str]:
    """The plain reproducer saved beside the draft and run in a fresh interpreter (not for a
    hang, which would only hang here), writing torch's structured trace to ``trace`` for
    tlparse: its exit status and output."""
    snippet = atomic_write(at.directory / f"{signature}.plain.py", plain.source)
    if at.left() <= 1 or case.verdict is None or case.verdict.kind == Kind.TIMEOUT:
        return None, ""
    at.log(f"running {snippet}")
    return run_snippet(snippet, timeout=min(SNIPPET_TIMEOUT, at.left()), case=case,
                       extra_env=tlparse.trace_environment(trace))


def _bisect(at: Drafting, case: Case, attribution: Attribution | None, signature: str,
            after: int) -> None:
    """The bisector, with the time beyond what the ``after`` drafts still to come need."""
    if not at.bisect or attribution is None or attribution.bisect is not None:
        return
    spare = at.left() - at.draft_reserve * after
    if spare < BISECT_MIN:
        attribution.bisect = {"status": "not run", "message": "no time left tonight"}
        return
    at.log(f"bisecting {signature}")
    attribution.bisect = run_bisect(case, timeout=min(900.0, spare))
    at.log(f"  bisector: {bisect_summary(attribution.bisect)}")


def run_snippet(path: Path, timeout: float = 600, case: Case | None = None,
                extra_env: dict[str, str] | None = None) -> tuple[int | None, str]:
    """Run a plain reproducer (or any script) as a person would, in a fresh interpreter in its
    own folder, under glibc's malloc checking where ``case`` was found under it or is
    memory-unsafe (the draft says to run it so): its exit status and its output (stdout, then
    stderr's last lines). The one way numfuzz runs a script is ``triage.confirm.run_script``
    (under this interpreter here)."""
    checked = case is not None and memcheck.found_under(
        case.origin, case.verdict.kind if case.verdict else "") and memcheck.library()
    env = {**(memcheck.environment() if checked else {}), **(extra_env or {})}
    return confirm.run_script(path, timeout=timeout, extra_env=env or None)



"""The per-finding pipeline of a night: a bucket's representative minimized, triaged and
recorded under its cause signature, and each other member checked against that cause (its
drafts: ``nightly.drafts``; which work comes next and on which lane: ``nightly.backlog`` and
``nightly.lanes``).

A representative (``work_on``): minimize, attribute over the full knob set, locate, cause
signature; a known cause is a hit on its ``known.toml`` entry, by what it showed or by its
mechanism (unless upstream fixed it in this torch or before: then it came back, and is drafted as
a regression), a cause recorded wontfix upstream (``findings --wontfix``) a hit on that cause as
known, any other a hit on its root cause, merged with a near match, or a new one, which earns
the arm it was found on its value (``campaign.arms``). A member: a bucket hit on that cause
after its check (``buckets.check_member``), or off to a bucket of its own. A case file an
earlier night processed that tonight's campaign found again is a hit on its cause.

Only a case minimized to the minimizer's fixpoint is triaged and recorded (and so drafted): a
minimization stopped by a budget is kept under ``<corpus>/minimizing/`` and carried on from there
the next night, and said so in SUMMARY.md; a case whose triage the deadline cut keeps its
minimized form there too. Time: minimizing and triaging stop early enough to leave each draft
owed its ``NightSettings.draft_reserve``, so a cause recorded tonight is drafted tonight; every run,
subprocess and bisector ends by the night's deadline (``Context.runners``: in-flight work is cut
there, never judged), so a night ends within its budget.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from fuzzer import clock
from fuzzer.campaign.settings import arm_of
from fuzzer.corpus.case import Case, CaseError, versions
from fuzzer.device import Device
from fuzzer.execute.pool import OutOfTime
from fuzzer.ir.graph import op_chain, readable_chain
from fuzzer.judge.kinds import Kind
from fuzzer.nightly.backlog import PARK_AFTER, URGENT, Backlog, Work
from fuzzer.nightly.buckets import Settled, check_member
from fuzzer.nightly.night import Context
from fuzzer.report import draft
from fuzzer.report.store import Finding
from fuzzer.triage import known, ledger, value
from fuzzer.triage.attribute import Attribution
from fuzzer.triage.signature import (
    cause_of,
    graph_dtype,
    match_fields,
    mechanism_of,
    same_cause,
    same_mechanism,
    signature_fields,
    signature_of,
)

CHECKPOINTS = "minimizing"  # <corpus>/minimizing/<case file>: a minimization carried on
MIN_CASE_SECONDS = 20.0  # a case is not started with less than this before its deadline
MINIMIZE_SHARE = 2 / 3  # of what a case has left, for the minimizer; the rest for triage


class Ended(StrEnum):
    """How one full pipeline ended."""

    SETTLED = "settled"  # a cause, a known entry, no finding
    NOT_REPRODUCIBLE = "not reproducible"
    FAILED = "failed"  # an error, a minimizer short of its fixpoint: an attempt that counts
    LEFT = "left"  # the night's time ran out: the next night carries on


@dataclass(frozen=True)
class Result:
    """How one full pipeline ended (``state``), in words (``how``), and what its bucket's
    members are checked against where it settled as a cause."""

    state: Ended
    how: str
    settled: Settled | None = None


@dataclass(frozen=True)
class Shrunk:
    """What minimizing a case tonight gave: the case at the minimizer's fixpoint and its k/k,
    or no case (``note``: why it does not reproduce; none: a budget stopped it short, kept to
    carry on)."""

    case: Case | None
    reliability: tuple[int, int] | None = None
    note: str = ""


def work_on(ctx: Context, backlog: Backlog, work: Work) -> None:
    """One piece of backlog work on this lane: a representative's full pipeline, or a member's
    check against its bucket's cause."""
    key = work.item.key
    if work.check:
        _check_member(ctx, backlog, work)
        return
    if work.bucket.fingerprint is not None and work.bucket.fingerprint.known:
        _settle_by_fingerprint(ctx, backlog, work)
        return
    began = clock.now()
    ctx.store.attempt(key)
    result = _process_one(ctx, work.item.path, key)
    seconds = clock.now() - began
    if result.state == Ended.SETTLED:
        backlog.settle(work, result.how, result.settled, seconds)
    elif result.state == Ended.NOT_REPRODUCIBLE:
        backlog.not_reproduced(work, result.how, seconds)
    elif result.state == Ended.LEFT:
        backlog.leave(work)
    elif backlog.fail(work, ctx.store, result.how, seconds):
        ctx.store.mark_processed(ctx.night.id, key, f"parked after {PARK_AFTER} failed "
                                                    f"attempts: {result.how}"[:500])
        _checkpoint(ctx, key).unlink(missing_ok=True)
        ctx.log(f"{key}: parked ({result.how})")
    with ctx.lock:
        ctx.night.cause_seconds[key] = round(seconds, 1)


def _settle_by_fingerprint(ctx: Context, backlog: Backlog, work: Work) -> None:
    """A raw crash whose file alone tells a known or ledger cause (``buckets.tells``), from
    whatever surface: one run confirms it crashes so again, and it is a hit on that cause, its
    bucket's members then checked the same way; nothing is minimized. A representative that
    does not crash again goes through the full pipeline (a bucket of its own)."""
    fingerprint = work.bucket.fingerprint
    assert fingerprint is not None and fingerprint.known  # work_on sends only these
    began = clock.now()
    settled = Settled(fingerprint.known, counted_as=fingerprint.counted_as)
    try:
        case = Case.load(work.item.path)
        check = check_member(case, settled, ctx.runners(ctx.processing_deadline()))
    except CaseError as err:
        ctx.store.mark_processed(ctx.night.id, work.item.key, f"unreadable: {err}")
        backlog.settle(work, "unreadable")
        return
    except OutOfTime:
        backlog.leave(work)
        return
    except Exception as err:  # one bad case must not end the night
        ctx.harness_error("fingerprint check", work.item.key, err)
        backlog.split(work, f"its check raised {type(err).__name__}")
        return
    if not check.hit:
        ctx.log(f"{work.item.key}: not {fingerprint.known} after all: {check.how}")
        backlog.split(work, check.how)
        return
    ctx.store.record_known(fingerprint.known, ctx.night.id, work.item.key, settled.counted_as)
    how = f"{settled.counted_as}: {fingerprint.known} (told by its crash, confirmed in one run)"
    backlog.settle(work, how, settled, clock.now() - began)
    ctx.log(f"{work.item.key}: {how}")


def _check_member(ctx: Context, backlog: Backlog, work: Work) -> None:
    """A member of a bucket whose representative settled: a hit on that cause when its check
    holds (``buckets.check_member``), else a bucket of its own."""
    key, settled = work.item.key, work.bucket.settled
    assert settled is not None  # only members of settled buckets are checked
    try:
        case = Case.load(work.item.path)
    except CaseError as err:
        ctx.store.mark_processed(ctx.night.id, key, f"unreadable: {err}")
        backlog.settle(work, "unreadable")
        return
    try:
        check = check_member(case, settled, ctx.runners(ctx.processing_deadline()))
    except OutOfTime:
        backlog.leave(work)
        return
    except Exception as err:  # one bad case must not end the night: it is processed in full
        ctx.harness_error("bucket check", key, err)
        backlog.split(work, f"its check raised {type(err).__name__}")
        return
    if not check.hit:
        ctx.log(f"{key}: leaves bucket {work.bucket.id}: {check.how}")
        backlog.split(work, check.how, check.sub)
        return
    how = f"bucket hit on {settled.counted_as + ' ' if settled.known else ''}{settled.label}: " \
        f"{check.how}"
    if settled.known:  # its row says ``known: <entry>`` (or by-design), as every such hit's
        ctx.store.record_known(settled.label, ctx.night.id, key, settled.counted_as)
    elif (finding := ctx.store.get(settled.label)) is not None:
        finding.torch, finding.triton = _versions()
        ctx.store.record(finding, night=ctx.night.id, key=key)
        ctx.store.mark_processed(ctx.night.id, key, how[:500], settled.label)
    else:  # a cause no longer in the store (removed by hand): the member goes in full
        backlog.split(work, f"its bucket's cause {settled.label} is not in the store")
        return
    backlog.settle(work, how)
    ctx.log(f"{key}: {how}")


def hit_again(ctx: Context, key: str, earlier: sqlite3.Row) -> None:
    """Tonight's campaign produced a case file an earlier night processed."""
    finding = ctx.store.get(earlier["signature"]) if earlier["signature"] else None
    if finding is None:
        ctx.store.mark_processed(ctx.night.id, key, f"seen before: {earlier['outcome']}")
        return
    if finding.upstream_state == "wontfix":  # closed upstream as expected: known, not a hit
        ctx.store.record_known(finding.signature, ctx.night.id, key)
        ctx.log(f"{key}: known cause {finding.signature} (wontfix upstream)")
        return
    finding.torch, finding.triton = _versions()
    ctx.store.record(finding, night=ctx.night.id, key=key)
    ctx.log(f"{key}: recurring {finding.signature} ({finding.title})")


def _versions() -> tuple[str, str]:
    found = versions()
    return found["torch"], found["triton"]


def _process_one(ctx: Context, path: Path, key: str) -> Result:
    """Minimize to the fixpoint, triage and record one case file (``Result``): a minimization a
    budget stopped, or triage the deadline cut, keeps its progress for the next attempt."""
    ctx.log(f"{key}: processing")
    try:
        case = Case.load(path)
    except CaseError as err:
        ctx.store.mark_processed(ctx.night.id, key, f"unreadable: {err}")
        return Result(Ended.SETTLED, "unreadable")
    if case.verdict is None or not case.verdict.is_finding:
        ctx.store.mark_processed(ctx.night.id, key, "not a finding")
        return Result(Ended.SETTLED, "not a finding")
    deadline = ctx.processing_deadline()
    try:
        shrunk = _minimize(ctx, key, case, deadline)
        if shrunk.note:
            _not_reproducible(ctx, key, shrunk.note)
            return Result(Ended.NOT_REPRODUCIBLE, f"not reproducible: {shrunk.note}")
        minimized, reliability = shrunk.case, shrunk.reliability
        if minimized is None:
            return Result(Ended.FAILED, "the minimizer stopped short of its fixpoint")
        urgent = value.classify(minimized).number in URGENT
        attribution, fields = cause_of(minimized, ctx.runners(deadline), k=ctx.settings.k,
                                       stop=lambda: ctx.out_of_time(deadline),
                                       spread=ctx.spread, urgent=urgent)
        settled = _record(ctx, key, minimized, attribution, fields, reliability, sighting(case),
                          arm_of(case.origin))
        _checkpoint(ctx, key).unlink(missing_ok=True)
        _finished(ctx, key)
        return Result(Ended.SETTLED, settled.label if not settled.known
                      else f"{settled.counted_as}: {settled.label}", settled)
    except OutOfTime as err:  # not processed: the next night carries on from the checkpoint
        _unfinished(ctx, key, f"the night's time ran out ({err})")
        return Result(Ended.LEFT, "the night's time ran out")
    except Exception as err:  # one bad case must not end the night: an attempt that failed
        ctx.harness_error("processing", key, err)
        _finished(ctx, key)
        return Result(Ended.FAILED, f"error: {type(err).__name__}: {err}"[:300])


def _unfinished(ctx: Context, key: str, why: str) -> None:
    ctx.log(f"{key}: left for the next night: {why}")
    with ctx.lock:
        _finished(ctx, key)
        ctx.night.unfinished.append(f"{key}: {why}")


def _finished(ctx: Context, key: str) -> None:
    """``key`` is no longer left for the next night (a later attempt finished it)."""
    with ctx.lock:
        ctx.night.unfinished[:] = [u for u in ctx.night.unfinished
                                   if not u.startswith(f"{key}: ")]


def _not_reproducible(ctx: Context, key: str, note: str) -> None:
    ctx.log(f"{key}: not reproducible: {note}")
    ctx.store.mark_processed(ctx.night.id, key, f"not reproducible: {note}"[:500])
    _checkpoint(ctx, key).unlink(missing_ok=True)
    _finished(ctx, key)


def _checkpoint(ctx: Context, key: str) -> Path:
    """Where a minimization not finished tonight is kept for the next night."""
    return ctx.settings.corpus_dir / CHECKPOINTS / key


def _minimize(ctx: Context, key: str, case: Case, deadline: float | None) -> Shrunk:
    """The case minimized to the fixpoint and its k/k; no case when it was not finished
    tonight (kept as a checkpoint); a note when it does not reproduce. Carries on from the
    checkpoint an earlier night left. A timeout is kept whole (as minimal as it gets here):
    every minimizer call would wait the full timeout."""
    from fuzzer.reduce.minimize import NotReproducible, minimize

    assert case.verdict is not None  # _process_one minimizes findings only
    if case.verdict.kind == Kind.TIMEOUT:
        return Shrunk(case)
    start = _carried(ctx, key) or case
    if start.origin.get("fixpoint") is True:  # minimized an earlier night (or elsewhere)
        ctx.log(f"  minimized already: {len(start.graph)} ops")
        recorded = start.origin.get("reliability")
        if recorded:
            return Shrunk(start, (recorded[0], recorded[1]))
        from fuzzer.reduce.minimize import reliability

        measured = reliability(start, ctx.runners(deadline).get(case.device), ctx.settings.k)
        start.origin["reliability"] = list(measured)
        ctx.log(f"  reliability {measured[0]}/{measured[1]} in fresh compiles")
        if measured[0] == 0:
            return Shrunk(None, note=f"the minimized case reproduced 0/{measured[1]} in fresh "
                                     "compiles")
        return Shrunk(start, measured)
    s = ctx.settings
    budgets = [ctx.left(deadline) * MINIMIZE_SHARE, s.minimize_seconds or math.inf]
    seconds = min(budgets) if min(budgets) < math.inf else None
    try:
        runners = ctx.runners(deadline)
        share = (ctx.spread, runners, value.classify(case).number in URGENT) \
            if ctx.spread is not None else None
        result = minimize(start, runners.get(case.device), k=s.k, share=share,
                          max_calls=s.max_calls, seconds=seconds, corpus=s.corpus_dir,
                          progress=lambda text: ctx.log(f"  minimize: {text}"))
    except NotReproducible as err:
        return Shrunk(None, note=str(err))
    ctx.log(f"  minimized {result.original_ops} -> {result.final_ops} ops in {result.calls} "
            f"calls, {result.seconds:.0f}s, reliability {result.reliability[0]}/"
            f"{result.reliability[1]}, fixpoint {'reached' if result.fixpoint else 'not reached'}")
    result.case.origin["reliability"] = list(result.reliability)
    if result.reliability[0] == 0:  # shrunk on lucky runs: what is left is no finding to file
        return Shrunk(None, note=f"the minimized case reproduced 0/{result.reliability[1]} in "
                                 "fresh compiles")
    if not result.fixpoint:
        result.case.save(_checkpoint(ctx, key))
        _unfinished(ctx, key, f"minimizer stopped short of its fixpoint ({result.stopped}) at "
                              f"{result.final_ops} ops, {result.final_elements} input elements; "
                              "it carries on from there")
        return Shrunk(None)
    result.case.save(_checkpoint(ctx, key))  # triage may be cut: keep what is done
    return Shrunk(result.case, result.reliability)


def _carried(ctx: Context, key: str) -> Case | None:
    """The minimization an earlier night left for this case file, if any (and readable)."""
    path = _checkpoint(ctx, key)
    try:
        return Case.load(path) if path.is_file() else None
    except CaseError:
        return None


def sighting(case: Case) -> tuple[str, str]:
    """The head and the graph a raw (not yet minimized) case found its cause through."""
    verdict = case.verdict
    node = case.graph.node(verdict.node) \
        if verdict and verdict.node is not None and verdict.node in case.graph else None
    head = node.label if node else (verdict.kind if verdict else "?")
    return head, readable_chain(case.graph)


def finding_for(case: Case, attribution: Attribution | None,
                reliability: tuple[int, int] | None, arm: str | None = None) -> Finding:
    assert case.verdict is not None  # a finding is recorded from a case with its verdict
    torch_version, triton_version = _versions()
    return Finding(
        signature=signature_of(signature_fields(case, attribution)), kind=case.verdict.kind,
        device=Device(case.device).type, dtype=graph_dtype(case),
        op_chain=" ".join(op_chain(case.graph)), output=draft.output_label(case.verdict),
        title=draft.title_for(case, attribution), summary=case.verdict.summary(),
        distance_ulps=draft.distance_ulps(case.verdict), reliability=reliability,
        torch=torch_version, triton=triton_version,
        attribution=attribution.to_dict() if attribution else {},
        value_class=value.classify(case, mechanism_of(attribution)).number, arm=arm)


def _record(ctx: Context, key: str, case: Case, attribution: Attribution, fields: dict,
            reliability: tuple[int, int] | None, seen: tuple[str, str], arm: str) -> Settled:
    """A known cause is a hit on its entry (by what it showed, or by its mechanism: where it
    first diverges), counted as a known bug or as documented behaviour; else one of numfuzz's
    own ledger causes is a re-find of it (recorded under its id, never drafted as new; a known
    or not-a-bug row of the ledger a hit like a known entry's); else a hit on the root cause it
    is (or nearly is, ``same_cause``, or is by mechanism, ``same_mechanism``: a variant, listed
    in its draft), or a new one, which earns its arm its value (``campaign.arms``). The smallest
    repro among a cause's members is kept. Returns what its bucket's members are checked
    against."""
    torch_version = _versions()[0]
    matched = match_fields(case, attribution, fields)
    entry = known.match(matched, known.entries(ctx.settings.known_file), torch_version)
    if entry is not None and not entry.reappeared(torch_version):
        ctx.store.record_known(entry.id, ctx.night.id, key, entry.counted_as)
        ctx.log(f"{key}: {entry.counted_as} cause {entry.id} ({entry.state(torch_version)}): "
                f"{entry.what}")
        return Settled.of(entry.id, attribution.to_dict(), counted_as=entry.counted_as)
    if entry is not None:  # upstream fixed it in this torch or before: a regression, drafted
        ctx.log(f"{key}: matches {entry.id}, fixed upstream in {entry.fixed_in}, yet reproduces "
                f"on torch {torch_version}: drafted as a regression")
    refound = ledger.match(matched, version=torch_version) if entry is None else None
    if refound is not None and refound.counted_as != ledger.REFIND:
        ctx.store.record_known(refound.id, ctx.night.id, key, refound.counted_as)
        ctx.log(f"{key}: {refound.counted_as} cause {refound.id} of the ledger: "
                f"{refound.mechanism[:120]}")
        return Settled.of(refound.id, attribution.to_dict(), counted_as=refound.counted_as)
    finding = finding_for(case, attribution, reliability, arm)
    finding.ledger = refound.id if refound is not None else None
    with ctx.lock:  # the lanes: two forms of one new mechanism recorded at once are one cause
        return _stored(ctx, key, case, attribution, fields, finding, seen, arm)


def _stored(ctx: Context, key: str, case: Case, attribution: Attribution, fields: dict,
            finding: Finding, seen: tuple[str, str], arm: str) -> Settled:
    """The cause recorded in the store: merged with the cause it is (or is by mechanism: a
    variant), a hit on a cause closed upstream as expected (known), or a new one, credited."""
    variant = False
    recorded = ctx.store.get(finding.signature)
    if recorded is None:
        merged, variant = _same_in_store(ctx, finding, fields, mechanism_of(attribution))
        if merged is not None:
            finding.signature, recorded = merged.signature, merged
    if recorded is not None and recorded.ledger:  # the store remembers what it re-found
        finding.ledger = recorded.ledger
    if recorded is not None and recorded.upstream_state == "wontfix":  # closed as expected
        ctx.store.record_known(recorded.signature, ctx.night.id, key)
        ctx.log(f"{key}: known cause {recorded.signature} (wontfix upstream: "
                f"{recorded.upstream_url})")
        return Settled.of(recorded.signature, attribution.to_dict(), counted_as=known.KNOWN)
    case_dir = ctx.settings.reports / "findings" / finding.signature
    kept = case_dir / "case.pt"
    # A variant's case is another program: the cause keeps its own (its attribution's)
    if not kept.exists() or (_smaller(case, kept) and not variant):
        case.save(kept)
    finding.case_path = str(kept)
    new = ctx.store.record(finding, night=ctx.night.id, key=key,
                           cause=None if variant else fields, sighting=seen)
    if new and finding.ledger is None:  # a new mechanism, in neither the known list nor the ledger
        worth = value.classify(case, mechanism_of(attribution))
        ctx.store.credit(ctx.night.id, arm, worth.weight)
    said = f"REFIND of {finding.ledger}" if finding.ledger else "NEW" if new else "recurring"
    ctx.log(f"{key}: {said} {finding.signature}: {finding.title}; {attribution.summary()}")
    return Settled.of(finding.signature, attribution.to_dict())


def _same_in_store(ctx: Context, finding: Finding, fields: dict, root: dict
                   ) -> tuple[Finding | None, bool]:
    """For a signature the store does not hold: the store's cause this one is (``same_cause``:
    a core the minimizer left longer), else one it is by mechanism (``same_mechanism``: another
    view or elementwise op carrying it, NaN instead of a loss of accuracy), recorded as its
    variant; (None, False) for a cause the store holds in no form. The second value: a
    variant."""
    stored = [(f, c) for f in ctx.store.findings() if (c := ctx.store.cause(f.signature))]
    same = next((f for f, cause in stored if same_cause(cause, fields)), None)
    if same is not None:
        return same, False
    for other, cause in stored:
        if same_mechanism(cause, mechanism_of(Attribution.from_dict(other.attribution)),
                          fields, root):
            ctx.store.record_variant(other.signature, finding.signature, finding.title,
                                     ctx.night.id)
            ctx.log(f"  one mechanism with {other.signature} ({other.title}): a variant")
            return other, True
    return None, False


def _smaller(case: Case, kept: Path) -> bool:
    from fuzzer.reduce.size import size_key

    try:
        return size_key(case) < size_key(Case.load(kept))
    except CaseError:
        return True

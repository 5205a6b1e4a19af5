"""The per-finding pipeline of a night: each new case file minimized, triaged and recorded
under its cause signature (its drafts: ``nightly.drafts``).

Process: every corpus case file no night has processed, by value class and then in turns by
divergence (``in_turns``): minimize, attribute over the full knob set, locate, cause signature;
a known cause is a hit on its ``known.toml`` entry, by what it showed or by its mechanism
(unless upstream fixed it in this torch or before: then it came back, and is drafted as a
regression), a cause recorded wontfix upstream (``findings --wontfix``) a hit on that cause as
known, any other a hit on its root cause, merged with a near match, or a new one, which earns
the arm it was found on its value (``campaign.arms``); a case file an earlier night processed
that tonight's campaign found again is a hit on its cause. A second pass picks up the slips the
minimizer saved.

Only a case minimized to the minimizer's fixpoint is triaged and recorded (and so drafted): a
minimization stopped by a budget is kept under ``<corpus>/minimizing/`` and carried on from there
the next night, and said so in SUMMARY.md; a case whose triage the deadline cut keeps its
minimized form there too. Time: minimizing and triaging stop early enough to leave each draft
owed its ``NightSettings.draft_reserve``, so a cause recorded tonight is drafted tonight; every run,
subprocess and bisector ends by the night's deadline (``Context.runners``: in-flight work is cut
there, never judged), so a night ends within its budget.
"""

from __future__ import annotations

import itertools
import math
import sqlite3
from pathlib import Path

from fuzzer.campaign.settings import arm_of
from fuzzer.corpus.case import Case, CaseError, versions
from fuzzer.device import Device
from fuzzer.execute.pool import OutOfTime
from fuzzer.ir.graph import op_chain, readable_chain
from fuzzer.judge.key import DivergenceKey
from fuzzer.judge.kinds import RANK, Kind
from fuzzer.judge.verdict import severity_key
from fuzzer.nightly.night import Context
from fuzzer.report import draft
from fuzzer.report.store import Finding
from fuzzer.triage import known, value
from fuzzer.triage.attribute import Attribution
from fuzzer.triage.signature import (
    cause_of,
    graph_dtype,
    mechanism_of,
    same_cause,
    signature_fields,
    signature_of,
)

CHECKPOINTS = "minimizing"  # <corpus>/minimizing/<case file>: a minimization carried on
MIN_CASE_SECONDS = 20.0  # a case is not started with less than this before its deadline
MINIMIZE_SHARE = 2 / 3  # of what a case has left, for the minimizer; the rest for triage


def process(ctx: Context) -> None:
    """Every corpus case file: a hit if processed before, else the full pipeline, strongest
    first. A second pass picks up the slips the minimizer saved to the corpus during the first."""
    fresh = sum(1 for r in ctx.store.night_rows(ctx.night.id)
                if r["outcome"] != "recurring" and not r["outcome"].startswith("seen before"))
    tried: set[str] = set()  # a case left short tonight waits for the next night, not pass two
    for _ in range(2):
        fresh, backlog = _process_pass(ctx, fresh, tried)
    ctx.night.backlog = backlog
    if backlog:
        ctx.log(f"{backlog} case files left for the next night (max findings / time)")


def _process_pass(ctx: Context, fresh: int, tried: set[str]) -> tuple[int, int]:
    found = set(ctx.night.found)
    pending = []
    backlog = 0
    for path in sorted(ctx.settings.corpus_dir.glob("*.pt"),
                       key=lambda p: (p.stat().st_mtime, p.name)):
        key = path.name
        if ctx.store.processed(ctx.night.id, key):
            continue
        earlier = ctx.store.earlier(key)
        if key in tried:
            backlog += 1  # started tonight and left short: its budget was spent tonight
        elif earlier is None:
            pending.append(path)
        elif key in found:
            _hit_again(ctx, key, earlier)
    for path in in_turns(pending):  # only the new files are read to rank them
        if fresh >= ctx.settings.max_findings or \
                ctx.left(ctx.processing_deadline()) < MIN_CASE_SECONDS:
            backlog += 1
            continue
        fresh += 1
        tried.add(path.name)
        backlog += not _process_one(ctx, path, path.name)
        ctx.checkpoint()
    return fresh, backlog


def in_turns(files: list[Path]) -> list[Path]:
    """By value first (``triage.value``, as the raw case shows it: a silent wrong value on
    ordinary inputs before a crash, edge inputs and signed zeros last), and within a value class
    one case of each divergence before a second of any: divergences in the order of their most
    severe case (``verdict.severity_key``), each one's cases strongest first, then oldest (the
    order given). A divergence is a verdict kind, and for a crash or timeout what tells crashes
    apart (``DivergenceKey``: the exception type and innermost torch frames), so a night that
    runs out of time has minimized one finding of every kind and every crash of its most
    valuable class rather than a run of one kind (a 45-minute night spent its 13 minutes on 9
    of its 23 non-finite findings and reached none of its 35 crashes, among them a heap
    corruption: RESULTS §24)."""
    def read(path: Path) -> tuple[int, tuple[int, int], object]:
        try:
            case = Case.load(path)
        except CaseError:
            case = None
        if case is None or case.verdict is None:
            return value.UNKNOWN, (len(RANK) + 2, 0), None
        key = DivergenceKey.of(case.verdict)
        return value.classify(case).number, severity_key(case.verdict), \
            (key.kind, key.error, key.frames)

    seen = {path: read(path) for path in files}
    ordered: list[Path] = []
    for number in sorted({seen[p][0] for p in files}):
        classes: dict[object, list[Path]] = {}
        for path in sorted((p for p in files if seen[p][0] == number), key=lambda p: seen[p][1]):
            classes.setdefault(seen[path][2], []).append(path)
        turns = itertools.zip_longest(*classes.values())
        ordered += [path for turn in turns for path in turn if path is not None]
    return ordered


def _hit_again(ctx: Context, key: str, earlier: sqlite3.Row) -> None:
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


def _process_one(ctx: Context, path: Path, key: str) -> bool:
    """Minimize to the fixpoint, triage and record one case file; False when it is left for
    the next night (a budget stopped the minimizer, or the deadline came), its progress kept."""
    ctx.log(f"{key}: processing")
    try:
        case = Case.load(path)
    except CaseError as err:
        ctx.store.mark_processed(ctx.night.id, key, f"unreadable: {err}")
        return True
    if case.verdict is None or not case.verdict.is_finding:
        ctx.store.mark_processed(ctx.night.id, key, "not a finding")
        return True
    deadline = ctx.processing_deadline()
    try:
        minimized, reliability, note = _minimize(ctx, key, case, deadline)
        if note:
            _not_reproducible(ctx, key, note)
            return True
        if minimized is None:
            return False
        attribution, fields = cause_of(minimized, ctx.runners(deadline), k=ctx.settings.k,
                                       stop=lambda: ctx.out_of_time(deadline))
        _record(ctx, key, minimized, attribution, fields, reliability, sighting(case),
                arm_of(case.origin))
        _checkpoint(ctx, key).unlink(missing_ok=True)
        _finished(ctx, key)
    except OutOfTime as err:  # not processed: the next night carries on from the checkpoint
        _unfinished(ctx, key, f"the night's time ran out ({err})")
        return False
    except Exception as err:  # one bad case must not end the night
        ctx.harness_error("processing", key, err)
        ctx.store.mark_processed(ctx.night.id, key, f"error: {type(err).__name__}: {err}"[:500])
        _checkpoint(ctx, key).unlink(missing_ok=True)
        _finished(ctx, key)
    return True


def _unfinished(ctx: Context, key: str, why: str) -> None:
    ctx.log(f"{key}: left for the next night: {why}")
    _finished(ctx, key)
    ctx.night.unfinished.append(f"{key}: {why}")


def _finished(ctx: Context, key: str) -> None:
    """``key`` is no longer left for the next night (a second pass finished it)."""
    ctx.night.unfinished[:] = [u for u in ctx.night.unfinished if not u.startswith(f"{key}: ")]


def _not_reproducible(ctx: Context, key: str, note: str) -> None:
    ctx.log(f"{key}: not reproducible: {note}")
    ctx.store.mark_processed(ctx.night.id, key, f"not reproducible: {note}"[:500])
    _checkpoint(ctx, key).unlink(missing_ok=True)
    _finished(ctx, key)


def _checkpoint(ctx: Context, key: str) -> Path:
    """Where a minimization not finished tonight is kept for the next night."""
    return ctx.settings.corpus_dir / CHECKPOINTS / key


def _minimize(ctx: Context, key: str, case: Case, deadline: float | None
              ) -> tuple[Case | None, tuple[int, int] | None, str]:
    """The case minimized to the fixpoint and its k/k; (None, …) when it was not finished
    tonight (kept as a checkpoint); a note when it does not reproduce. Carries on from the
    checkpoint an earlier night left. A timeout is kept whole (as minimal as it gets here):
    every minimizer call would wait the full timeout."""
    from fuzzer.reduce.minimize import NotReproducible, minimize

    assert case.verdict is not None  # _process_one minimizes findings only
    if case.verdict.kind == Kind.TIMEOUT:
        return case, None, ""
    start = _carried(ctx, key) or case
    if start.origin.get("fixpoint") is True:  # minimized an earlier night (or elsewhere)
        ctx.log(f"  minimized already: {len(start.graph)} ops")
        recorded = start.origin.get("reliability")
        if recorded:
            return start, tuple(recorded), ""
        from fuzzer.reduce.minimize import reliability

        measured = reliability(start, ctx.runners(deadline).get(case.device), ctx.settings.k)
        start.origin["reliability"] = list(measured)
        ctx.log(f"  reliability {measured[0]}/{measured[1]} in fresh compiles")
        if measured[0] == 0:
            return case, None, (f"the minimized case reproduced 0/{measured[1]} in fresh "
                                "compiles")
        return start, measured, ""
    s = ctx.settings
    budgets = [ctx.left(deadline) * MINIMIZE_SHARE, s.minimize_seconds or math.inf]
    seconds = min(budgets) if min(budgets) < math.inf else None
    try:
        result = minimize(start, ctx.runners(deadline).get(case.device), k=s.k,
                          max_calls=s.max_calls, seconds=seconds, corpus=s.corpus_dir,
                          progress=lambda text: ctx.log(f"  minimize: {text}"))
    except NotReproducible as err:
        return case, None, str(err)
    ctx.log(f"  minimized {result.original_ops} -> {result.final_ops} ops in {result.calls} "
            f"calls, {result.seconds:.0f}s, reliability {result.reliability[0]}/"
            f"{result.reliability[1]}, fixpoint {'reached' if result.fixpoint else 'not reached'}")
    result.case.origin["reliability"] = list(result.reliability)
    if result.reliability[0] == 0:  # shrunk on lucky runs: what is left is no finding to file
        return case, None, (f"the minimized case reproduced 0/{result.reliability[1]} in fresh "
                            "compiles")
    if not result.fixpoint:
        result.case.save(_checkpoint(ctx, key))
        _unfinished(ctx, key, f"minimizer stopped short of its fixpoint ({result.stopped}) at "
                              f"{result.final_ops} ops, {result.final_elements} input elements; "
                              "it carries on from there")
        return None, None, ""
    result.case.save(_checkpoint(ctx, key))  # triage may be cut: keep what is done
    return result.case, result.reliability, ""


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
        title=draft.title_for(case), summary=case.verdict.summary(),
        distance_ulps=draft.distance_ulps(case.verdict), reliability=reliability,
        torch=torch_version, triton=triton_version,
        attribution=attribution.to_dict() if attribution else {},
        value_class=value.classify(case, mechanism_of(attribution)).number, arm=arm)


def _record(ctx: Context, key: str, case: Case, attribution: Attribution, fields: dict,
            reliability: tuple[int, int] | None, seen: tuple[str, str], arm: str) -> None:
    """A known cause is a hit on its entry (by what it showed, or by its mechanism: where it
    first diverges); else a hit on the root cause it is (or nearly is, ``same_cause``), or a
    new one, which earns its arm its value (``campaign.arms``). The smallest repro among a
    cause's members is kept."""
    torch_version = _versions()[0]
    entry = known.match({**fields, "root": mechanism_of(attribution)},
                        known.entries(ctx.settings.known_file), torch_version)
    if entry is not None and not entry.reappeared(torch_version):
        ctx.store.record_known(entry.id, ctx.night.id, key)
        ctx.log(f"{key}: known cause {entry.id} ({entry.state(torch_version)}): {entry.what}")
        return
    if entry is not None:  # upstream fixed it in this torch or before: a regression, drafted
        ctx.log(f"{key}: matches {entry.id}, fixed upstream in {entry.fixed_in}, yet reproduces "
                f"on torch {torch_version}: drafted as a regression")
    finding = finding_for(case, attribution, reliability, arm)
    merged = next((f for f in ctx.store.findings() if f.signature != finding.signature
                   and (c := ctx.store.cause(f.signature)) and same_cause(c, fields)), None)
    if merged is not None:
        finding.signature = merged.signature
    recorded = ctx.store.get(finding.signature)
    if recorded is not None and recorded.upstream_state == "wontfix":  # closed as expected
        ctx.store.record_known(recorded.signature, ctx.night.id, key)
        ctx.log(f"{key}: known cause {recorded.signature} (wontfix upstream: "
                f"{recorded.upstream_url})")
        return
    case_dir = ctx.settings.reports / "findings" / finding.signature
    kept = case_dir / "case.pt"
    if not kept.exists() or _smaller(case, kept):
        case.save(kept)
    finding.case_path = str(kept)
    new = ctx.store.record(finding, night=ctx.night.id, key=key, cause=fields, sighting=seen)
    if new:
        worth = value.classify(case, mechanism_of(attribution))
        ctx.store.credit(ctx.night.id, arm, worth.weight)
    ctx.log(f"{key}: {'NEW' if new else 'recurring'} {finding.signature}: {finding.title}; "
            f"{attribution.summary()}")


def _smaller(case: Case, kept: Path) -> bool:
    from fuzzer.reduce.size import size_key

    try:
        return size_key(case) < size_key(Case.load(kept))
    except CaseError:
        return True

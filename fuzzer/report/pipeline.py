"""The per-finding pipeline of a night: each new case file minimized, triaged and recorded
under its cause signature, then a draft for each new root cause.

Process: every corpus case file no night has processed, strongest first (``strongest_first``):
minimize, attribute over the full knob set, cause signature; a known cause is a hit on its
``known.toml`` entry (unless upstream fixed it in this torch or before: then it came back, and
is drafted as a regression), a cause recorded wontfix upstream (``findings --wontfix``) a hit on
that cause as known, any other a hit on its root cause, merged with a near match, or a new one;
a case file an earlier night processed that tonight's campaign found again is a hit on its cause.
A second pass picks up the slips the minimizer saved. Drafts: root causes without one and
not recorded upstream, strongest first, at most ``max_drafts``: bisector, repro run,
``reports/<date>/<signature>.md``, and upstream's side (``upstream.appendix``).
Each item checks the night's deadline; what is left waits for the next night.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from fuzzer.corpus.case import Case, CaseError, versions
from fuzzer.ir.graph import op_chain, readable_chain
from fuzzer.judge.kinds import RANK, Kind
from fuzzer.judge.oracle import severity_key
from fuzzer.report import draft, upstream
from fuzzer.report.night import Context
from fuzzer.report.store import Finding
from fuzzer.triage import known
from fuzzer.triage.attribute import (
    Attribution,
    OutOfTime,
    attribute,
    bisect_summary,
    run_bisect,
)
from fuzzer.triage.signature import graph_dtype, same_cause, signature_fields, signature_of


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

    if case.verdict.kind == Kind.TIMEOUT:
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
    head = node.label if node else (verdict.kind if verdict else "?")
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
    torch_version = _versions()[0]
    entry = known.match(fields, known.entries(ctx.settings.known_file), torch_version)
    if entry is not None and not entry.reappeared(torch_version):
        ctx.store.record_known(entry.id, ctx.night.id, key)
        ctx.log(f"{key}: known cause {entry.id} ({entry.state(torch_version)}): {entry.what}")
        return
    if entry is not None:  # upstream fixed it in this torch or before: a regression, drafted
        ctx.log(f"{key}: matches {entry.id}, fixed upstream in {entry.fixed_in}, yet reproduces "
                f"on torch {torch_version}: drafted as a regression")
    finding = finding_for(case, attribution, reliability)
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
    ctx.log(f"{key}: {'NEW' if new else 'recurring'} {finding.signature}: {finding.title}; "
            f"{attribution.summary()}")


def _smaller(case: Case, kept: Path) -> bool:
    from fuzzer.reduce.size import size_key

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
               if (f.draft_path is None or not Path(f.draft_path).exists())
               and f.upstream_state is None]  # a cause filed or wontfix upstream: no draft
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
    # Upstream's side, after the body: a known fix this torch holds, duplicates found so far.
    text += upstream.appendix(ctx.store, finding, ctx.settings.known_file, _versions()[0])
    draft.write_draft(path, text)
    ctx.log(f"draft {path} ({finding.title})")
    return path

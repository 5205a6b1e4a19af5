"""SUMMARY.md: what one night did, for the person who reads it in the morning.

First whether the night was clean (harness errors), then throughput and where the time went by
strategy and by arm (a surface crossed with a strategy: tonight's share of the plan, its cases,
CPU-seconds, raw findings and the new causes it earned, ``campaign.arms``), root causes new /
known / recurring / fixed and the new ones by value class, the new findings ranked (value class
first, ``triage.value``) with their drafts
and ``gh`` commands, known causes hit (built in, or recorded wontfix upstream) and new ones that
match a known fix this torch holds, the causes confirmed on other torches (``--confirm-with``:
drafted, fixed upstream, or held back), recurring ones, the recheck per cause (with ready comments
for filed issues now fixed), crashes, what was not reproducible or was left for the next night,
and the time per stage.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from fuzzer.campaign import harness
from fuzzer.corpus.case import versions
from fuzzer.corpus.files import atomic_write
from fuzzer.judge.kinds import RAISED
from fuzzer.nightly.night import Context, Night
from fuzzer.nightly.recheck import Recheck
from fuzzer.report import draft, ranking
from fuzzer.report.store import Finding, Store, now
from fuzzer.triage import known, ledger


def write_summary(ctx: Context) -> Path:
    return atomic_write(ctx.directory / "SUMMARY.md", summary_text(ctx))


def summary_text(ctx: Context) -> str:
    night, store = ctx.night, ctx.store
    rows = list(store.night_rows(night.id))
    new = ranking.ranked([f for r in rows if r["outcome"] == "new"
                        if (f := store.get(r["signature"]))])
    recurring = [f for sig in recurring_tonight(rows) if (f := store.get(sig))]
    other = [r for r in rows if r["outcome"] not in ("new", "recurring")]
    found = versions()
    torch_version, triton_version = found["torch"], found["triton"]
    parts = [f"# numfuzz nightly {night.date} (run {night.run})", "",
             f"torch {torch_version}, triton {triton_version}; device "
             f"{ctx.settings.campaign.device}, backend {ctx.settings.campaign.recipe.backend}, "
             f"seed {night.seed}; started {night.started}, "
             f"summary written {now()}.", "", *_health(ctx),
             *_throughput(night), *_arm_section(ctx), *_causes(ctx, new, recurring),
             *_new_section(ctx, new), *_refind_section(ctx),
             *_known_section(ctx, known_hits(store, night.id)), *_confirm_section(ctx),
             *_recurring_section(recurring),
             *_recheck_section(night.rechecks), *_crash_section(night, new + recurring),
             *_other_section(other, night), *_queue_section(night),
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


def recurring_tonight(rows: list) -> list[str]:
    """Causes an earlier night found that came back tonight: not those new tonight, which a
    second case file of theirs also marks recurring."""
    new = {r["signature"] for r in rows if r["outcome"] == "new"}
    return list(dict.fromkeys(r["signature"] for r in rows
                              if r["outcome"] == "recurring" and r["signature"] not in new))


def cause_counts(ctx: Context) -> dict[str, int]:
    """Tonight's root causes: new mechanisms, re-finds of numfuzz's own ledger causes, known
    hits and by-design hits (counted, not drafted), variants of a stored mechanism, the new
    signatures as counted before (``Store.tally``), recurring, fixed, the case files left for
    the next night, and of those confirmed on other torches (``--confirm-with``) how many were
    drafted, fixed upstream, or held back; what SUMMARY.md and the nightly's last log line
    both say."""
    rows = list(ctx.store.night_rows(ctx.night.id))
    confirmed = ctx.night.confirmed
    return {**ctx.store.tally(ctx.night.id),
            "recurring": len(recurring_tonight(rows)),
            "fixed": sum(r.after == "fixed" for r in ctx.night.rechecks),
            "left": ctx.night.backlog,
            "confirmed": sum(c.drafted for c in confirmed),
            "fixed_upstream": sum(c.fixed_in is not None for c in confirmed),
            "held_back": sum(not c.drafted and c.fixed_in is None for c in confirmed)}


def causes_line(ctx: Context) -> str:
    """One line for the log: the same counts as SUMMARY.md's root-cause table."""
    n = cause_counts(ctx)
    line = (f"root causes: {n['new']} new mechanisms, {n['refind']} re-finds of the ledger, "
            f"{n['known hits']} known hits, {n['by-design hits']} not bugs (by design, not "
            "Inductor's, or noise; counted, not drafted), "
            f"{n['recurring']} recurring, {n['fixed']} fixed; {n['left']} case files wait for "
            "the next night")
    return line + (f"; {_confirmed_counts(ctx)}" if ctx.settings.confirm_with else "")


def _confirmed_counts(ctx: Context) -> str:
    n = cause_counts(ctx)
    torches = ", ".join(p.torch for p in ctx.settings.confirm_with)
    return (f"confirmed on torch {torches}: {n['confirmed']} on every one (drafted), "
            f"{n['fixed_upstream']} fixed upstream on a newer torch (not drafted), "
            f"{n['held_back']} not on every one (not drafted)")


def _confirm_section(ctx: Context) -> list[str]:
    """Causes whose minimized repro ran under the torches named with ``--confirm-with``: per
    version whether it reproduces, and whether it was drafted."""
    if not ctx.settings.confirm_with:
        return []
    confirmed = ctx.night.confirmed
    lines = [f"## Confirmed on other torches: {len(confirmed)} causes", "",
             f"{_confirmed_counts(ctx)}. A cause is drafted only when its minimized repro "
             "reproduces on every torch named; one that no longer reproduces on a newer torch "
             "is recorded as fixed upstream there and never drafted.", ""]
    if not confirmed:
        return lines + ["None tonight.", ""]
    torches = [p.torch for p in ctx.settings.confirm_with]
    lines += [f"| signature | title | {' | '.join(f'torch {v}' for v in torches)} | drafted |",
              "|---|---|" + "---|" * len(torches) + "---|"]
    for c in confirmed:
        said = {r["torch"]: r["outcome"] for r in c.runs}
        cells = " | ".join(said.get(v, "-") for v in torches)
        verdict = "yes" if c.drafted else f"no: {c.why}"
        lines.append(f"| `{c.signature}` | {c.title} | {cells} | {verdict} |")
    return lines + [""]


def _causes(ctx: Context, new: list[Finding], recurring: list[Finding]) -> list[str]:
    n = cause_counts(ctx)
    counted = ", ".join(f"{k}: {n}" for k, n in sorted(ctx.night.raw_counted.items())) or "none"
    classes = ", ".join(f"class {c}: {sum(f.value_class == c for f in new)}"
                        for c in sorted({f.value_class for f in new if f.value_class})) or "none"
    return ["## Root causes", "",
            "| new mechanisms | re-finds (numfuzz's ledger) | known upstream (causes / hits) | "
            "not a bug: by design, not Inductor's, noise (causes / hits) | variants | "
            "recurring | fixed |",
            "|---|---|---|---|---|---|---|",
            f"| {n['new']} | {n['refind']} | {n['known']} / {n['known hits']} | "
            f"{n['by-design']} / {n['by-design hits']} | {n['variants']} | {n['recurring']} | "
            f"{n['fixed']} |", "",
            f"New mechanisms by value class: {classes}. As counted before causes were matched "
            f"by mechanism and against the ledger (every new signature), {n['signatures']}.", "",
            "A new mechanism is in neither the known list nor numfuzz's ledger (FINDINGS.md), "
            "and is not one mechanism with a cause the store holds; only it is drafted and "
            "earns its arm. A re-find is one of numfuzz's own causes found again (listed under "
            "its id, drafted only when asked for: `numfuzz findings --draft ID`); a known cause "
            "or one that is not a bug (documented behaviour, another library's bug, or "
            "numfuzz's own noise: the ledger's X and Z rows) is a hit on its entry, counted "
            "here and not stored as a finding; "
            "a variant is another form of a stored mechanism (another view or elementwise op "
            "carrying it, NaN instead of a loss of accuracy), listed in its draft.", "",
            f"Not findings (counted, not saved): {counted}.", ""]


def _refind_section(ctx: Context) -> list[str]:
    """numfuzz's own causes found again tonight: under their ledger ids, not drafted."""
    refound: dict[str, list[str]] = {}
    for row in ctx.store.night_rows(ctx.night.id):
        if row["outcome"].startswith("refind: "):
            refound.setdefault(row["outcome"].split(": ", 1)[1], []).append(row["signature"])
    lines = [f"## Re-finds of numfuzz's ledger: {len(refound)} causes", ""]
    if not refound:
        return lines + ["None tonight.", ""]
    lines += ["| ledger cause | state | hits tonight | signatures | mechanism |",
              "|---|---|---|---|---|"]
    for cause_id, signatures in sorted(refound.items()):
        cause = ledger.named(cause_id)
        state, what = (cause.state(), cause.mechanism[:160]) if cause else ("", "")
        sigs = ", ".join(f"`{s}`" for s in dict.fromkeys(signatures) if s) or \
            "— (told by its crash, not minimized)"
        lines.append(f"| {cause_id} | {state} | {len(signatures)} | {sigs} | {what} |")
    return lines + [""]


def _known_section(ctx: Context, hits: dict[str, int]) -> list[str]:
    """Causes known upstream, built in (``known.toml``) or recorded wontfix; then new causes
    that match a known entry whose fix this torch holds (regressions, drafted)."""
    lines = [f"## Known causes: {sum(hits.values())} hits", ""]
    rows = known_rows(ctx.store, hits, ctx.settings.known_file)
    if rows:
        lines += ["| known cause | counted as | hits | upstream | what upstream says |",
                  "|---|---|---|---|---|"]
        lines += [f"| `{r['id']}` | {r['counted_as']} | {r['hits']} | {r['state']} | "
                  f"{r['what']} |" for r in rows]
    else:
        lines.append("None tonight.")
    again = _reappeared(ctx)
    if again:
        lines += ["", "Matching a known cause that upstream fixed in an older torch than this "
                      "one (drafted as regressions):", ""]
        lines += [f"- `{sig}` matches `{entry.id}` (fixed in {entry.fixed_in})"
                  for sig, entry in again]
    return lines + [""]


def known_hits(store: Store, night: str | None = None) -> dict[str, int]:
    """Hits on known entries counted as known or by design (re-finds of the ledger's own causes
    have a section of their own)."""
    return {**store.known_hits(night, known.KNOWN), **store.known_hits(night, known.BY_DESIGN)}


def known_rows(store: Store, hits: dict[str, int], known_file: Path) -> list[dict]:
    """One row per known cause hit: built-in entries and root causes recorded as wontfix (whose
    hits are keyed by signature). Shared by SUMMARY.md and ``numfuzz findings``."""
    entries = {e.id: e for e in known.entries(known_file)}
    rows = []
    for entry_id, n in hits.items():
        entry, finding = entries.get(entry_id), store.get(entry_id)
        row = ledger.named(entry_id)
        if entry is not None:
            what = f"{entry.what} ({', '.join(entry.urls)})" if entry.urls else entry.what
            rows.append({"id": entry_id, "hits": n, "state": entry.state(), "what": what,
                         "urls": list(entry.urls), "counted_as": entry.counted_as})
        elif row is not None:  # a known or not-a-bug row of numfuzz's ledger
            rows.append({"id": entry_id, "hits": n, "state": row.status, "what":
                         f"FINDINGS.md {row.id}: {row.mechanism}", "urls": [],
                         "counted_as": row.counted_as})
        elif finding is not None:
            rows.append({"id": entry_id, "hits": n, "state": finding.upstream_state or "",
                         "what": f"{finding.title} ({finding.upstream_url})",
                         "urls": [finding.upstream_url] if finding.upstream_url else [],
                         "counted_as": known.KNOWN})
        else:  # an entry of another --known file
            rows.append({"id": entry_id, "hits": n, "state": "", "what": "", "urls": [],
                         "counted_as": known.KNOWN})
    return rows


def _reappeared(ctx: Context) -> list[tuple[str, known.Known]]:
    entries = known.entries(ctx.settings.known_file)
    found = []
    for row in ctx.store.night_rows(ctx.night.id):
        cause = ctx.store.cause(row["signature"]) if row["outcome"] == "new" else None
        entry = known.match(cause, entries) if cause else None
        if entry is not None and entry.reappeared():
            found.append((row["signature"], entry))
    return found


# Case files settled as a cause shown in a section of its own (known, by design, re-finds).
SETTLED_ELSEWHERE = ("known: ", "by-design: ", "refind: ")
SETTLED_AS = (("bucket hit", "bucket hit"), ("known", "known"), ("by-design", "known"),
              ("refind", "cause"),
              ("not reproducible", "not reproducible"), ("parked", "parked"),
              ("not a finding", "no finding"), ("unreadable", "no finding"))


def settled_as(how: str) -> str:
    """The column of the queue table a case's settlement goes in (``Backlog`` outcomes)."""
    return next((column for prefix, column in SETTLED_AS if how.startswith(prefix)), "cause")


def _queue_section(night: Night) -> list[str]:
    """The backlog tonight: raw findings in, how they settled, what is left; the buckets, what
    each holds and how each member settled; the time each full pipeline took."""
    if not night.buckets:
        return []
    columns = ["cause", "bucket hit", "known", "not reproducible", "parked", "no finding"]
    counts = dict.fromkeys(columns, 0)
    raw = left = 0
    for bucket in night.buckets:
        for how in bucket["members"].values():
            counts[settled_as(how)] += 1
        raw += len(bucket["members"]) + len(bucket["waiting"])
        left += len(bucket["waiting"])
    settled = raw - left
    lines = ["## The queue: raw findings to causes", "",
             f"{raw} raw case files in tonight's backlog (tonight's and carried over), "
             f"**{settled} settled ({settled / raw:.0%})**, {left} left for the next night; "
             f"{night.workers} lanes, each fuzzing or processing as the backlog asked.", "",
             f"| raw in | settled | {' | '.join(columns)} | left |",
             "|---" * (len(columns) + 3) + "|",
             f"| {raw} | {settled} | {' | '.join(str(counts[c]) for c in columns)} | {left} |",
             "", "Buckets (one representative minimized and triaged in full; each other member "
             "checked against its cause with a run or two; a member that fails the check leaves "
             "for a bucket of its own):", "",
             "| bucket | what | cases | representative | settled as | telling knob | "
             "minimize + triage | members |", "|---|---|---|---|---|---|---|---|"]
    for b in night.buckets:
        members = "; ".join(f"`{k}`: {how}" for k, how in b["members"].items()
                            if k != b["representative"])
        members += "".join(f"; `{k}` left: {why}" for k, why in b.get("departed", {}).items())
        members += f"; {len(b['waiting'])} waiting" if b["waiting"] else ""
        cause = f"{'known ' if b['known'] else ''}`{b['cause']}`" if b["cause"] else \
            b["members"].get(b["representative"], "not yet")
        lines.append(f"| `{b['id']}` | {b['what']} | {len(b['members']) + len(b['waiting'])} "
                     f"| `{b['representative'] or '-'}` | {cause} | {b['knob'] or '-'} | "
                     f"{b['seconds']:.0f}s | {members.lstrip('; ') or '-'} |")
    return lines + [""]


def _stage_section(ctx: Context) -> list[str]:
    s, seconds = ctx.settings, ctx.night.stage_seconds
    budget = f"{s.seconds:.0f}s" if s.seconds is not None else "none"
    lines = [f"## Time per stage (budget {budget}; the campaign runs in the first "
             f"{s.fuzz_share:.0%}, its lanes processing raw findings beside it)", "",
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
    lines += [f"| {name} | {row.cases} | {row.findings} | {row.seconds:.0f} |"
              for name, row in sorted(night.strategies.items())]
    return lines + [""]


def _arm_section(ctx: Context) -> list[str]:
    """Tonight's arms that found something: the share of the time the plan gave each, what it
    spent and found, and the new mechanisms credited to it (what the next night's plan reads);
    the arms that found nothing in one row, those planned and not run in a line."""
    night = ctx.night
    if not night.arms and not night.plan:
        return []
    credited = {r["arm"]: r for r in ctx.store.arm_nights(night.id)}
    shares = (night.plan or {}).get("shares", {})
    lines = ["## Tonight's arms (surface / strategy)", "",
             "Time is split over the arms by their yield of new mechanisms per CPU-second "
             "(weighted by value class; raw findings, re-finds and known hits earn nothing), "
             "over a floor that keeps every arm tried (`numfuzz findings --yield`: the standing "
             "table).", "",
             "| arm | planned share | cases | CPU-s | raw findings | new mechanisms | value |",
             "|---|---|---|---|---|---|---|"]
    ran = sorted(night.arms, key=lambda a: (-night.arms[a].seconds, a))
    found = [a for a in ran if night.arms[a].findings or credited.get(a, {}).get("causes")]
    for arm in found:
        row, got = night.arms[arm], credited.get(arm, {})
        share = f"{shares[arm]:.1%}" if arm in shares else "-"
        lines.append(f"| {arm} | {share} | {row.cases} | {row.seconds:.0f} | {row.findings} | "
                     f"{got.get('causes', 0)} | {got.get('value', 0):.2f} |")
    quiet = [night.arms[a] for a in ran if a not in found]
    if quiet:
        share = sum(shares.get(a, 0.0) for a in ran if a not in found)
        lines.append(f"| the other {len(quiet)} arms that ran (no raw finding) | {share:.1%} | "
                     f"{sum(r.cases for r in quiet)} | {sum(r.seconds for r in quiet):.0f} | 0 | "
                     "0 | 0.00 |")
    idle = sorted(set(shares) - set(night.arms))
    if idle:
        lines += ["", f"Planned and not run tonight ({len(idle)}): {', '.join(idle)}."]
    return lines + [""]


def yield_rows(store: Store, today: str, plan: dict | None = None) -> list[dict]:
    """The standing table: per arm, every night's usage discounted by age, its estimated
    value per CPU-hour, and (given a plan) the share it would get now."""
    from fuzzer.nightly.night import arm_history

    used = arm_history(store, today)
    shares = (plan or {}).get("shares", {})
    rows = []
    for arm in sorted(set(used) | set(shares)):
        u = used.get(arm)
        rows.append({"arm": arm, "cases": round(u.cases, 1) if u else 0,
                     "seconds": round(u.seconds, 1) if u else 0,
                     "findings": round(u.findings, 1) if u else 0,
                     "causes": round(u.causes, 2) if u else 0,
                     "value": round(u.value, 2) if u else 0,
                     "value_per_hour": round(3600 * u.value / u.seconds, 3)
                     if u and u.seconds else None,
                     "share": shares.get(arm)})
    return rows


def _new_section(ctx: Context, new: list[Finding]) -> list[str]:
    lines = [f"## New findings: {len(new)}", ""]
    if not new:
        return lines + ["None tonight.", ""]
    lines += ["Ranked by value class (1: a silent wrong value or a memory-unsafe write on "
              "ordinary inputs; 2: aliasing or mutation semantics; 3: a crash on valid code; "
              "4: needs edge inputs; 5: a signed zero), then by evidence. Each draft was "
              "generated by numfuzz; a person must check it before filing.", "",
              "| # | class | signature | title | reliability | draft |",
              "|---|---|---|---|---|---|"]
    held = {c.signature for c in ctx.night.confirmed if not c.drafted}
    for i, f in enumerate(new, 1):
        rel = f"{f.reliability[0]}/{f.reliability[1]}" if f.reliability else "-"
        link = f"[{Path(f.draft_path).name}]({Path(f.draft_path).name})" if f.draft_path else \
            f"none: fixed upstream in torch {f.fixed_upstream}" if f.fixed_upstream else \
            "none tonight: not on every --confirm-with torch" if f.signature in held else "-"
        lines.append(f"| {i} | {f.value_class or '-'} | `{f.signature}` | {f.title} | {rel} | "
                     f"{link} |")
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


def _recheck_section(rechecks: list[Recheck]) -> list[str]:
    """Per cause rechecked: still reproduces or fixed in this torch; for a filed cause that is
    fixed, the comment to post on its issue."""
    fixed = [r for r in rechecks if r.after == "fixed"]
    lines = [f"## Fixed: {len(fixed)} (of {len(rechecks)} open findings rechecked)", ""]
    if not rechecks:
        return lines
    lines += ["| signature | title | upstream | recheck |", "|---|---|---|---|"]
    for r in rechecks:
        upstream = f"{r.upstream_state} {r.upstream_url}" if r.upstream_state else "-"
        lines.append(f"| `{r.signature}` | {r.title} | {upstream} | {r.said()} |")
    comments = [r for r in rechecks if r.comment]
    if comments:
        lines += ["", "Ready comments for the upstream issues (numfuzz posts nothing):", ""]
        lines += [f"- {r.upstream_url}: {r.comment}" for r in comments]
    return lines + [""]


def _crash_section(night: Night, findings: list[Finding]) -> list[str]:
    raw = sum(n for k, n in night.raw_findings.items() if k in RAISED)
    crashes = [f for f in findings if f.kind in RAISED]
    lines = [f"## Crashes and timeouts: {raw} raw, {len(crashes)} signatures", ""]
    lines += [f"- `{f.signature}` {f.title}: {f.summary}" for f in crashes]
    return lines + [""]


def _other_section(other: list[sqlite3.Row], night: Night) -> list[str]:
    other = [r for r in other if not r["outcome"].startswith(SETTLED_ELSEWHERE)]
    lines = [f"## Not reproducible, errors, skipped: {len(other)}", ""]
    lines += [f"- {r['key']}: {r['outcome']}" for r in other]
    if night.backlog:
        lines += ["", f"## Left for the next night: {night.backlog} case files", "",
                  "A cause is recorded and drafted only from a case minimized to the minimizer's "
                  "fixpoint; a case not finished tonight keeps its progress and carries on the "
                  "next night."]
        if night.unfinished:
            lines += ["", *(f"- {line}" for line in night.unfinished)]
        untouched = night.backlog - len({u.split(":", 1)[0] for u in night.unfinished})
        if untouched > 0:
            lines += ["", f"{untouched} not started (max findings, or no time left)."]
    if night.drafts_deferred:
        lines += ["", f"{night.drafts_deferred} drafts wait for the next night (max drafts / "
                      "time)."]
    return lines + [""]

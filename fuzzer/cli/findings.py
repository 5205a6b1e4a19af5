"""``numfuzz findings``: the store as a ranked table with each cause's upstream issue, then the
known causes hit; ``--filed`` / ``--wontfix`` record a cause's upstream issue, ``--recheck``
first replays open findings on the installed torch, ``--upstream`` searches GitHub for likely
duplicates, ``--yield`` shows the arms' standing yield and each night's causes by what they are,
``--ledger`` numfuzz's own causes (FINDINGS.md) with their state (``--measure``: each one's
repro run here and under ``--confirm-with``), ``--draft ID`` one cause's draft on request. Bad
input is one line on stderr and exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from fuzzer.cli.common import (
    CONFIRM_WITH,
    UserError,
    log_line,
    main,
    plan_of,
    resolve_device,
    strict_json,
    surfaces_of,
    writable,
)

if TYPE_CHECKING:  # the commands import what they use when they run: --help stays light
    from collections.abc import Callable

    from fuzzer.report.store import Finding, Store


@main.command("findings")
@click.option("--reports", type=click.Path(file_okay=False, path_type=Path),
              default=Path("reports"), show_default=True)
@click.option("--filed", nargs=2, metavar="SIGNATURE URL",
              help="Record the upstream issue a root cause was filed as: it is not drafted "
                   "again, and once a recheck finds it fixed, a ready comment for the issue is "
                   "shown.")
@click.option("--wontfix", nargs=2, metavar="SIGNATURE URL",
              help="Record that upstream closed a root cause as expected behaviour (URL: where): "
                   "from then on it is counted as a known cause, never drafted again.")
@click.option("--recheck", is_flag=True,
              help="Replay open findings on the installed torch first: per cause, still "
                   "reproduces or fixed in this torch (with a ready comment for a filed issue).")
@click.option("--k", "k", type=click.IntRange(1, 20), default=3, show_default=True)
@click.option("--upstream", is_flag=True,
              help="Search GitHub's issues for likely duplicates of each open root cause (needs "
                   "GITHUB_TOKEN and network; NUMFUZZ_GITHUB_API overrides "
                   "https://api.github.com); list them here and append them to the cause's "
                   "draft. Without either it says so in one line and goes on.")
@click.option("--known", "known_file", type=click.Path(dir_okay=False, exists=True,
                                                       path_type=Path),
              help="The known causes the nights used (default: fuzzer/known.toml), to describe "
                   "their hits.")
@click.option("--yield", "show_yield", is_flag=True,
              help="The standing yield table instead: per arm (surface / strategy), the cases, "
                   "CPU-seconds, raw findings and new causes of every night (older nights "
                   "discounted), the value earned per CPU-hour, and the share the next night's "
                   "plan gives it.")
@click.option("--ledger", is_flag=True,
              help="numfuzz's own causes instead (FINDINGS.md, fuzzer/causes.toml): each one's "
                   "id, value class, state (found, not filed; filed as #N; fixed in X), its "
                   "repro, and how often this store's nights found it again. A night never "
                   "drafts one as new.")
@click.option("--measure", is_flag=True,
              help="With --ledger: run each cause's kept repro under this torch and each "
                   "--confirm-with one (a fresh process each; needs the repository's bench/).")
@click.option("--write", is_flag=True,
              help="With --measure: write each cause's measured fixed_in into the ledger "
                   "(fuzzer/causes.toml; a cause still reproducing on the newest torch run loses "
                   "it); then run python bench/findings_ledger.py.")
@CONFIRM_WITH
@click.option("--draft", "draft_id", metavar="ID",
              help="Write the draft of one cause of this store now, to REPORTS/drafts/: its "
                   "signature, or the ledger id of a cause the nights found again (N19), whose "
                   "draft then says it is numfuzz's own cause.")
@click.option("--json", "as_json", is_flag=True,
              help='{"findings": [...], "known": [...]} (and "rechecks" with --recheck; '
                   '{"arms": [...]} with --yield; {"ledger": [...]} with --ledger).')
def findings_command(reports: Path, filed: tuple[str, str] | None,
                     wontfix: tuple[str, str] | None, recheck: bool, k: int, upstream: bool,
                     known_file: Path | None, show_yield: bool, ledger: bool, measure: bool,
                     write: bool, confirm_with: tuple[str, ...], draft_id: str | None,
                     as_json: bool) -> None:
    """The findings store: value class, signature, kind, first/last seen, hits, status and
    upstream issue (ranked: value class first), then the known causes hit. --filed / --wontfix
    record a cause's upstream issue; --yield shows the standing yield table of the arms;
    --ledger numfuzz's own causes and their state; --draft writes one cause's draft."""
    from fuzzer.nightly.summary import known_hits, known_rows
    from fuzzer.report.ranking import ranked
    from fuzzer.report.store import DB_NAME, Store
    from fuzzer.triage.known import KNOWN_FILE, entries

    if (measure or confirm_with) and not ledger:
        raise UserError("--measure and --confirm-with go with --ledger")
    if write and not measure:
        raise UserError("--write goes with --ledger --measure")
    if ledger:
        ledger_table(reports, measure, confirm_with, as_json, write)
        return
    if not (reports / DB_NAME).is_file():
        raise UserError(f"{reports / DB_NAME}: no findings store (run `numfuzz nightly` first)")
    if recheck or upstream or filed or wontfix:  # they record what they find in the store
        writable(reports, "--reports")
    if show_yield:
        _yield_table(reports, as_json)
        return
    if draft_id is not None:
        writable(reports, "--reports")
        click.echo(draft_on_request(reports, draft_id, known_file or KNOWN_FILE))
        return
    known_file = known_file or KNOWN_FILE
    entries(known_file)  # a malformed file is one line and exit 2 before anything changes
    say = (lambda text: click.echo(text, err=True)) if as_json else click.echo
    rechecks = []
    with Store.in_reports(reports) as store:
        for state, given in (("filed", filed), ("wontfix", wontfix)):
            if given is not None:
                _record_upstream(store, state, *given, say=say)
        if recheck:
            rechecks = _recheck(store, k, quiet=as_json)
        if upstream:
            _search_upstream(store, say)
        findings = ranked(store.findings())
        searches = {f.signature: store.upstream_search(f.signature) for f in findings}
        known = known_rows(store, known_hits(store), known_file)
    if as_json:
        rows = [{**f.to_dict(), "duplicates": (searches[f.signature] or {}).get("results")}
                for f in findings]
        out = {"findings": rows, "known": known}
        if recheck:
            out["rechecks"] = rechecks
        click.echo(strict_json(out))
        return
    _print_findings(findings, reports)
    _print_duplicates(findings, searches)
    _print_known(known)
    _print_comments(rechecks)
    _print_last_night(reports)


def ledger_table(reports: Path, measure: bool, confirm_with: tuple[str, ...],
                 as_json: bool, write: bool = False) -> None:
    """``findings --ledger``: numfuzz's own causes with their state and this store's re-finds
    (the store is optional); with ``--measure``, each repro run on this torch and others."""
    from fuzzer.report.store import DB_NAME, Store
    from fuzzer.triage import confirm, ledger

    refound: dict[str, int] = {}
    if (reports / DB_NAME).is_file():
        with Store.in_reports(reports) as store:
            for f in store.findings():
                if f.ledger:
                    refound[f.ledger] = refound.get(f.ledger, 0) + f.hits
            for entry, n in store.known_hits().items():  # re-finds told by a crash, K/X hits
                if ledger.named(entry) is not None:
                    refound[entry] = refound.get(entry, 0) + n
    pythons = (confirm.this_interpreter(), *confirm.interpreters(confirm_with)) if measure \
        else ()
    rows: list[dict[str, object]] = []
    fixed: dict[str, str | None] = {}
    for cause in ledger.causes():
        runs = ledger.measure(cause, pythons) if measure else []
        if write and runs and ledger.measured_fix(runs) is not None:
            fixed[cause.id] = ledger.measured_fix(runs) or None
        if measure and not as_json:
            log_line(f"{cause.id}: {ledger.measured_state(cause, runs)}")
        rows.append({"id": cause.id, "group": cause.group, "value_class": cause.value_class,
                     "state": cause.state(), "status": cause.status,
                     "matched_by": len(cause.forms), "repro": cause.repro or None,
                     "found_again": refound.get(cause.id, 0),
                     "measured": ledger.measured_state(cause, runs) if measure else None,
                     "runs": [r.to_dict() for r in runs], "mechanism": cause.mechanism})
    written = ledger.write_fixed_in(ledger.LEDGER_FILE, fixed) if write else []
    if as_json:
        click.echo(strict_json({"ledger": rows, "written": written}))
        return
    if write:
        log_line(f"wrote the measured fixed_in of {', '.join(written) or 'no cause'} to "
                 f"{ledger.LEDGER_FILE}; run python bench/findings_ledger.py")
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"numfuzz's own causes ({len(rows)}, FINDINGS.md); found again in "
                        f"{reports}")
    columns = ["id", "class", "state", "found again", "forms", "repro", "mechanism"]
    for col in columns[:-1] + (["measured"] if measure else []) + columns[-1:]:
        table.add_column(col, overflow="fold")
    for r in rows:
        cells = ["-" if r[k] is None else str(r[k]) for k in ("id", "value_class", "state",
                                                              "found_again", "matched_by", "repro")]
        table.add_row(*cells, *([str(r["measured"])] if measure else []),
                      str(r["mechanism"])[:90])
    Console(width=200).print(table)


def draft_on_request(reports: Path, ident: str, known_file: Path) -> Path:
    """``findings --draft ID``: the draft of one cause of the store (a signature, or the ledger
    id of a cause found again, the newest such), written to ``REPORTS/drafts/``."""
    import math

    from fuzzer.execute.pool import RunnerPool
    from fuzzer.nightly.drafts import write_draft_for
    from fuzzer.nightly.night import Drafting
    from fuzzer.report.store import Store

    with Store.in_reports(reports) as store:
        finding = store.get(ident) or next(
            (f for f in sorted(store.findings(), key=lambda f: f.last_seen, reverse=True)
             if f.ledger == ident), None)
        if finding is None or finding.case_path is None:
            raise UserError(f"--draft {ident}: no cause with that signature or ledger id in "
                            f"{reports} (`numfuzz findings` lists signatures, `--ledger` ids)")
        directory = reports / "drafts"
        pool = RunnerPool()
        at = Drafting(directory, store, lambda: pool, lambda: math.inf, log_line, known_file)
        try:
            return write_draft_for(at, finding, directory / f"{finding.signature}.md",
                                   directory / "collect_env.txt")
        finally:
            pool.close()


def _yield_table(reports: Path, as_json: bool) -> None:
    """``findings --yield``: the standing table, with the shares a plan made now would give
    (over every surface this torch runs on the CPU or, with a GPU, CUDA)."""
    import time

    from rich.console import Console
    from rich.table import Table

    from fuzzer.nightly.summary import yield_rows
    from fuzzer.report.store import Store

    device = resolve_device("auto")
    plan = plan_of(surfaces_of((), False, None), None, device, "inductor",
                   _default_weights(), False, reports)
    assert plan is not None  # no surface pinned, no seed model: plan_of makes one
    with Store.in_reports(reports) as store:
        rows = yield_rows(store, time.strftime("%Y-%m-%d"), plan.to_dict())
        tallies = {night: store.tally(night) for night in store.nights()}
    if as_json:
        click.echo(strict_json({"arms": rows, "device": device, "nights": tallies}))
        return
    table = Table(title=f"{reports}: yield per arm (older nights discounted; next plan on "
                        f"{device})")
    for col in ("arm", "cases", "CPU-s", "raw findings", "new causes", "value",
                "value/CPU-h", "next share"):
        table.add_column(col, overflow="fold")
    for r in sorted(rows, key=lambda r: -(r["share"] or 0)):
        per_hour = "-" if r["value_per_hour"] is None else f"{r['value_per_hour']:.3f}"
        share = "-" if r["share"] is None else f"{r['share']:.1%}"
        table.add_row(r["arm"], f"{r['cases']:g}", f"{r['seconds']:.0f}", f"{r['findings']:g}",
                      f"{r['causes']:g}", f"{r['value']:.2f}", per_hour, share)
    Console(width=160).print(table)
    _print_tallies(tallies)


def _print_tallies(tallies: dict[str, dict[str, int]]) -> None:
    """Per night, its causes by what they are: only new mechanisms earn an arm its value."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="causes per night: new mechanisms (in neither the known list nor "
                        "numfuzz's ledger) apart from re-finds, known and by-design hits")
    columns = ("new", "refind", "known", "known hits", "by-design", "by-design hits",
               "variants", "signatures")
    heads = ("new mechanisms", "re-finds", "known", "known hits", "by design",
             "by-design hits", "variants", "new signatures (before)")
    table.add_column("night")
    for head in heads:
        table.add_column(head, justify="right")
    for night, n in tallies.items():
        table.add_row(night, *(str(n[c]) for c in columns))
    Console(width=160).print(table)


def _default_weights() -> dict[str, float]:
    from fuzzer.gen.strategy import parse_weights

    return parse_weights(())


def _record_upstream(store: Store, state: str, signature: str, url: str,
                     say: Callable[[str], None]) -> None:
    """``--filed`` / ``--wontfix``: a known signature and an http(s) address, or one line."""
    from urllib.parse import urlparse

    address = urlparse(url)
    if address.scheme not in ("http", "https") or not address.netloc:
        raise UserError(f"--{state}: {url!r} is not a URL; give the upstream issue's address, "
                        "e.g. https://github.com/pytorch/pytorch/issues/12345")
    if not store.set_upstream(signature, state, url):
        raise UserError(f"--{state}: no root cause {signature!r} in {store.path} (the "
                        "signatures are in the first column of `numfuzz findings`)")
    say(f"{signature}: {state} upstream as {url}"
        + ("; counted as known from now on, never drafted again" if state == "wontfix" else ""))


def _recheck(store: Store, k: int, quiet: bool) -> list[dict]:
    from dataclasses import asdict

    from fuzzer.execute.pool import RunnerPool
    from fuzzer.nightly.recheck import recheck

    pool = RunnerPool()
    try:
        return [asdict(r) for r in recheck(store, pool, k=k, log=None if quiet else log_line)]
    finally:
        pool.close()


def _search_upstream(store: Store, say: Callable[[str], None]) -> None:
    """Likely duplicates upstream; without a token or network one line, and the listing goes
    on (exit 0)."""
    from fuzzer.report.upstream import Unavailable, find_duplicates

    try:
        searched = find_duplicates(store, log=say)
    except Unavailable as err:
        say(f"upstream: {err}")
        return
    say(f"upstream: searched GitHub's issues for {searched} open root causes")


def _print_findings(findings: list[Finding], reports: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{reports}: {len(findings)} findings (ranked)")
    for col in ("class", "signature", "kind", "title", "first seen", "last seen", "hits", "k/k",
                "status", "upstream"):
        table.add_column(col, overflow="fold")
    for f in findings:
        rel = f"{f.reliability[0]}/{f.reliability[1]}" if f.reliability else "-"
        status = f"{f.status} in {f.fixed_in}" if f.status == "fixed" and f.fixed_in else f.status
        if f.fixed_upstream:
            status += f"; fixed upstream in {f.fixed_upstream}"
        if f.ledger:  # one of numfuzz's own causes, found again: drafted only on request
            status += f"; re-find of {f.ledger}"
        upstream = f"{f.upstream_state} {f.upstream_url}" if f.upstream_state else "-"
        table.add_row(str(f.value_class or "-"), f.signature, f.kind,
                      f.title.removeprefix("[numfuzz] "), f.first_seen,
                      f.last_seen, str(f.hits), rel, status, upstream)
    Console(width=200).print(table)


def _print_duplicates(findings: list[Finding], searches: dict) -> None:
    from fuzzer.report.upstream import Duplicate

    for f in findings:
        found = searches.get(f.signature)
        if found is None or f.upstream_state is not None:
            continue
        click.echo(f"possible duplicates upstream of {f.signature} (searched {found['at']}):")
        for result in found["results"] or []:
            click.echo(f"  {Duplicate(**result).line()}")
        if not found["results"]:
            click.echo("  none found")


def _print_known(rows: list[dict]) -> None:
    """Known causes hit, built in or recorded wontfix: a night whose findings were all known
    still shows what it found."""
    if not rows:
        return
    click.echo(f"known causes: {sum(r['hits'] for r in rows)} hits (counted, not drafted)")
    for r in rows:
        state = f", {r['state']}" if r["state"] else ""
        links = f": {' '.join(r['urls'])}" if r["urls"] else ""
        click.echo(f"  {r['id']}: {r['hits']} hits{state}{links}")


def _print_comments(rechecks: list[dict]) -> None:
    comments = [r for r in rechecks if r.get("comment")]
    if comments:
        click.echo("ready comments for the upstream issues (numfuzz posts nothing):")
    for r in comments:
        click.echo(f"  {r['upstream_url']}: {r['comment']}")


def _print_last_night(reports: Path) -> None:
    """Whether the latest night was clean, and its first harness errors if it was not."""
    from fuzzer.nightly.night import latest_night

    night = latest_night(reports)
    if night is None:
        return
    state = "still running or killed" if night.status == "running" else night.status
    if not night.harness_errors and not night.stopped:
        click.echo(f"last night {night.id} ({state}): clean, no harness errors")
        return
    click.echo(f"last night {night.id} ({state}): {night.harness_errors} harness errors"
               + (f"; fuzzing {night.stopped}" if night.stopped else ""))
    for message in night.harness_messages:
        click.echo(f"  {message}")

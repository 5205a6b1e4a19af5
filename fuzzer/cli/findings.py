"""``numfuzz triage``, ``nightly`` and ``findings``: from a divergence to a bug report.

``triage CASE``: which knob or compiler stage makes the divergence vanish (exit 0; 3 when the case
does not reproduce in a fresh compile, as for ``minimize``). ``nightly``: what cron runs (exit 0
for a clean night, 1 for one with harness errors, 2 for one stopped early). ``findings``: the
store as a ranked table; ``--recheck`` first replays open findings on the installed torch. Bad
input is one line on stderr and exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fuzzer.cli.common import (
    UserError,
    compile_options,
    log_line,
    main,
    parse_duration,
    recipe_of,
    resolve_device,
    strict_json,
    writable,
)
from fuzzer.judge.kinds import POLICIES

if TYPE_CHECKING:  # the commands import what they use when they run: --help stays light
    from fuzzer.corpus.case import Case
    from fuzzer.report.store import Finding, Store
    from fuzzer.triage.attribute import Attribution


def _knobs(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    from fuzzer.triage.attribute import knob_named

    names = tuple(n.strip() for n in text.split(",") if n.strip())
    for name in names:
        try:
            knob_named(name)
        except KeyError as err:
            raise UserError(str(err.args[0])) from None
    return names


# ------------------------------------------------------------------ triage


@main.command("triage")
@click.argument("case_path", metavar="CASE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--knobs", help="Comma-separated knob names (default: all that act on the device).")
@click.option("--no-bisect", is_flag=True, help="Skip torch's CompilerBisector.")
@click.option("--timeout", type=float, default=300, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def triage_command(case_path: Path, knobs: str | None, no_bisect: bool, timeout: float,
                   as_json: bool) -> None:
    """Which knob or compiler stage makes a case's divergence go away.

    Exit 0: attributed (the table says which knobs, if any, make it vanish); 3: the case does not
    reproduce in a fresh compile, so there is nothing to attribute; 2: bad input (a file that is
    not a case, or records no divergence)."""
    from fuzzer.corpus.case import Case
    from fuzzer.execute.pool import RunnerPool
    from fuzzer.triage.attribute import KNOBS, knob_named, triage
    from fuzzer.triage.signature import signature

    case = Case.load(case_path)
    if case.verdict is None or not case.verdict.is_finding:
        raise UserError(f"{case_path}: the case records no divergence to triage")
    names = _knobs(knobs)
    chosen = KNOBS if names is None else tuple(knob_named(n) for n in names)
    pool = RunnerPool(timeout=timeout, warmup=case.recipe.warms_up)
    try:
        attribution = triage(case, pool, knobs=chosen, bisect=not no_bisect,
                             progress=None if as_json else log_line)
    finally:
        pool.close()
    sig = signature(case, attribution)
    if as_json:
        click.echo(strict_json({"case": str(case_path), "signature": sig,
                                "attribution": attribution.to_dict()}))
    else:
        _print_attribution(case, attribution, sig)
    sys.exit(0 if attribution.reproduces else 3)


def _print_attribution(case: Case, attribution: Attribution, sig: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from fuzzer.triage.attribute import bisect_summary

    console = Console(width=120)
    console.print(f"[bold]{case.verdict.summary()}[/]")
    if not attribution.reproduces:
        console.print(f"does not reproduce in a fresh compile: {attribution.baseline}")
        return
    table = Table(title="each knob alone, fresh compile")
    for col in ("knob", "divergence", "verdict under the knob", "s"):
        table.add_column(col)
    for k in attribution.knobs:
        table.add_row(k.knob, k.outcome, k.verdict[:60], f"{k.seconds:.1f}")
    console.print(table)
    console.print(f"vanishes with: {', '.join(attribution.vanishing()) or 'no knob'}")
    if attribution.bisect is not None:
        console.print(f"bisector: {bisect_summary(attribution.bisect)}")
    console.print(f"signature: {sig}")


# ------------------------------------------------------------------ nightly


@main.command("nightly")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
@click.option("--time", "duration", help="Budget for the whole night (e.g. 6h); fuzzing gets 70%.")
@click.option("--cases", type=click.IntRange(min=1), help="Fuzz this many cases.")
@click.option("--reports", type=click.Path(file_okay=False, path_type=Path),
              default=Path("reports"), show_default=True)
@click.option("--corpus", type=click.Path(file_okay=False, path_type=Path),
              help="Where raw findings live (default REPORTS/corpus); unprocessed ones are "
                   "minimized tonight too.")
@click.option("--seed", type=int, help="Campaign seed (default: from the date).")
@click.option("--backend", default="inductor", show_default=True)
@click.option("--grammar", type=click.Choice(["mixed", "vision", "attention"]), default="mixed",
              show_default=True)
@click.option("--k", "k", type=click.IntRange(1, 20), default=3, show_default=True)
@click.option("--max-calls", type=click.IntRange(min=1), default=200, show_default=True,
              help="Minimizer oracle calls per finding.")
@click.option("--max-findings", type=click.IntRange(min=0), default=20, show_default=True,
              help="New case files minimized per night; the rest wait for the next.")
@click.option("--knobs", help="Comma-separated knob names to try besides the full set, which "
                              "every cause signature is taken over.")
@click.option("--no-bisect", is_flag=True, help="Skip torch's CompilerBisector for new findings.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--timeout", type=float, default=300, show_default=True)
@click.option("--policy", type=click.Choice(POLICIES), default="float64", show_default=True,
              help="What the night's campaign judges discrete flips against (see run --help).")
@click.option("--max-drafts", type=click.IntRange(min=0), default=5, show_default=True,
              help="New root causes drafted per night, strongest first; the rest wait.")
@click.option("--strategy", "strategies", multiple=True, metavar="NAME=WEIGHT",
              help="Weight of a campaign strategy (see run --help); repeatable.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="ray: fuzz, minimize and triage on a Ray cluster's actors (see run --help).")
@click.option("--ray-address", help="The Ray cluster to join (auto: the one `ray start` made).")
@click.option("--known", "known_file", type=click.Path(dir_okay=False, exists=True,
                                                       path_type=Path),
              help="Known causes (TOML, see fuzzer/known.toml, the default): hits, not drafts.")
@compile_options
@click.option("--search", type=click.Choice(["random", "guided"]), default="random",
              show_default=True, help="The night's campaign search (see run --help).")
def nightly_command(device: str, duration: str | None, cases: int | None, reports: Path,
                    corpus: Path | None, seed: int | None, backend: str, grammar: str, k: int,
                    max_calls: int, max_findings: int, knobs: str | None, no_bisect: bool,
                    workers: int, timeout: float, policy: str, max_drafts: int,
                    strategies: tuple[str, ...], engine: str, ray_address: str | None,
                    known_file: Path | None, dynamic: bool, mode: str,
                    inductor_config: tuple[str, ...], training: bool, search: str) -> None:
    """Fuzz, minimize, triage, store, draft, recheck; write REPORTS/<date>/SUMMARY.md."""
    from fuzzer.campaign.settings import Settings
    from fuzzer.gen.strategy import parse_weights
    from fuzzer.report.night import NightSettings, night_of, plain_log
    from fuzzer.report.nightly import run_night

    seconds = parse_duration(duration)
    if seconds is None and cases is None:
        raise UserError("give a budget: --time (e.g. 6h) or --cases N")
    writable(reports, "--reports")
    if corpus is not None:
        writable(corpus, "--corpus")
    device = resolve_device(device)
    recipe = recipe_of(backend, inductor_config, dynamic, mode, training, policy, device)
    campaign = Settings(device=device, cases=cases, grammar=grammar, workers=workers,
                        recipe=recipe, timeout=timeout,
                        strategies=parse_weights(strategies, grammar), search=search)
    settings = NightSettings(reports=reports, campaign=campaign, seconds=seconds, seed=seed,
                             corpus=corpus, k=k, max_calls=max_calls, max_findings=max_findings,
                             bisect=not no_bisect, knobs=_knobs(knobs), max_drafts=max_drafts,
                             engine=engine, ray_address=ray_address,
                             minimize_seconds=None if seconds is None else seconds * 0.1)
    if known_file is not None:
        from fuzzer.triage.known import entries

        entries(known_file)  # a malformed file is one line and exit 2 now, not at dawn
        settings.known_file = known_file
    path = run_night(settings, log=plain_log)
    night = night_of(path)
    click.echo(f"summary: {path}")
    if night.stopped:
        raise UserError(f"night {night.id}: fuzzing {night.stopped}")
    if night.harness_errors:
        click.echo(f"night {night.id}: {night.harness_errors} harness errors (see {path})",
                   err=True)
    sys.exit(night.exit_status)


# ------------------------------------------------------------------ findings


@main.command("findings")
@click.option("--reports", type=click.Path(file_okay=False, path_type=Path),
              default=Path("reports"), show_default=True)
@click.option("--recheck", is_flag=True, help="Replay open findings on the installed torch first.")
@click.option("--k", "k", type=click.IntRange(1, 20), default=3, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def findings_command(reports: Path, recheck: bool, k: int, as_json: bool) -> None:
    """The findings store: signature, kind, first/last seen, hits, status (ranked)."""
    from fuzzer.report.draft import ranked
    from fuzzer.report.store import DB_NAME, Store

    if not (reports / DB_NAME).is_file():
        raise UserError(f"{reports / DB_NAME}: no findings store (run `numfuzz nightly` first)")
    if recheck:  # it records what it finds in the store
        writable(reports, "--reports")
    with Store.in_reports(reports) as store:
        if recheck:
            _recheck(store, k, quiet=as_json)
        findings = ranked(store.findings())
    if as_json:
        click.echo(strict_json([f.to_dict() for f in findings]))
        return
    _print_findings(findings, reports)
    _print_last_night(reports)


def _recheck(store: Store, k: int, quiet: bool) -> None:
    from fuzzer.execute.pool import RunnerPool
    from fuzzer.report.recheck import recheck

    pool = RunnerPool()
    try:
        recheck(store, pool, k=k, log=None if quiet else log_line)
    finally:
        pool.close()


def _print_findings(findings: list[Finding], reports: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{reports}: {len(findings)} findings (ranked)")
    for col in ("signature", "kind", "title", "first seen", "last seen", "hits", "k/k",
                "status"):
        table.add_column(col)
    for f in findings:
        rel = f"{f.reliability[0]}/{f.reliability[1]}" if f.reliability else "-"
        status = f"{f.status} in {f.fixed_in}" if f.status == "fixed" and f.fixed_in else f.status
        table.add_row(f.signature, f.kind, f.title.removeprefix("[numfuzz] "), f.first_seen,
                      f.last_seen, str(f.hits), rel, status)
    Console(width=160).print(table)


def _print_last_night(reports: Path) -> None:
    """Whether the latest night was clean, and its first harness errors if it was not."""
    from fuzzer.report.night import latest_night

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


# ------------------------------------------------------------------ export


@main.command("export")
@click.option("--pytest", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Write each open root cause as an xfail pytest module under this directory.")
@click.option("--reports", type=click.Path(file_okay=False, path_type=Path),
              default=Path("reports"), show_default=True)
def export_command(out: Path, reports: Path) -> None:
    """Open root causes as regression tests: xfail while the bug is there, failing (strict) once
    a torch fixes it, which says: close the issue."""
    from fuzzer.report.export import pytest_module
    from fuzzer.report.store import DB_NAME, Store

    if not (reports / DB_NAME).is_file():
        raise UserError(f"{reports / DB_NAME}: no findings store (run `numfuzz nightly` first)")
    writable(out, "--pytest")
    with Store.in_reports(reports) as store:
        findings = [f for f in store.findings(status="open") if f.case_path]
    for finding in findings:
        click.echo(f"wrote {pytest_module(finding, out)}")
    click.echo(f"{len(findings)} open root causes exported; run: python -m pytest {out}")

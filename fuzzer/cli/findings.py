"""``numfuzz triage``, ``nightly`` and ``findings``: from a divergence to a bug report.

``triage CASE``: which knob or compiler stage makes the divergence vanish (exit 0; 3 when the case
does not reproduce in a fresh compile, as for ``minimize``). ``nightly``: what cron runs (exit 0
for a clean night, 1 for one with harness errors, 2 for one stopped early). ``dashboard``: a
static HTML page over every night (``report.dashboard``). ``findings``: the store as a ranked
table with each cause's upstream issue, then the known causes hit; ``--filed`` /
``--wontfix`` record a cause's upstream issue, ``--recheck`` first replays open findings on the
installed torch, ``--upstream`` searches GitHub for likely duplicates. ``--confirm-with PYTHON``
(``triage``, ``nightly``) runs a case's repro.py under another environment's torch too
(``triage.confirm``). Bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fuzzer.cli.common import (
    UserError,
    arm_options,
    compile_options,
    follow_malloc_check,
    log_line,
    main,
    malloc_check_by_default,
    parse_duration,
    pinned_surface,
    plan_of,
    recipe_of,
    resolve_device,
    strict_json,
    surfaces_of,
    writable,
)
from fuzzer.judge.kinds import POLICIES

if TYPE_CHECKING:  # the commands import what they use when they run: --help stays light
    from collections.abc import Callable

    from fuzzer.corpus.case import Case
    from fuzzer.report.store import Finding, Store
    from fuzzer.triage.attribute import Attribution
    from fuzzer.triage.confirm import Decision, Run


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


CONFIRM_WITH = click.option(
    "--confirm-with", "confirm_with", multiple=True, metavar="PYTHON",
    help="Another environment's python (e.g. a nightly build's), repeatable: the case's "
         "repro.py runs there too, and a cause is drafted only when it reproduces on every "
         "torch named (one that no longer does on a newer torch is fixed upstream there).")


# ------------------------------------------------------------------ triage


@main.command("triage")
@click.argument("case_path", metavar="CASE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--knobs", help="Comma-separated knob names (default: all of them, which a cause "
                              "signature needs; with a subset no signature is given).")
@click.option("--k", "k", type=click.IntRange(1, 20), default=3, show_default=True,
              help="Fresh runs per knob, by majority (the nightly's default).")
@click.option("--no-bisect", is_flag=True, help="Skip torch's CompilerBisector.")
@click.option("--timeout", type=float, default=300, show_default=True)
@CONFIRM_WITH
@click.option("--json", "as_json", is_flag=True)
def triage_command(case_path: Path, knobs: str | None, k: int, no_bisect: bool, timeout: float,
                   confirm_with: tuple[str, ...], as_json: bool) -> None:
    """Which knob or compiler stage makes a case's divergence go away, and its cause signature
    (taken as the nightly takes it: see ``triage.signature``).

    Exit 0: attributed (the table says which knobs, if any, make it vanish); 3: the case does not
    reproduce in a fresh compile, so there is nothing to attribute; 2: bad input (a file that is
    not a case, or records no divergence, or a --confirm-with interpreter without torch)."""
    from dataclasses import asdict

    from fuzzer.corpus.case import Case
    from fuzzer.execute.pool import RunnerPool
    from fuzzer.triage import confirm
    from fuzzer.triage.attribute import attribute, bisect_summary, knob_named, run_bisect
    from fuzzer.triage.signature import cause_of, signature_caveat, signature_of

    case = Case.load(case_path)
    if case.verdict is None or not case.verdict.is_finding:
        raise UserError(f"{case_path}: the case records no divergence to triage")
    checking = follow_malloc_check(case.origin, case.verdict.kind if case.verdict else "")
    names = _knobs(knobs)
    pythons = confirm.interpreters(confirm_with)  # a bad one is one line now, before any run
    say = None if as_json else log_line
    pool = RunnerPool(timeout=timeout, warmup=case.recipe.warms_up, base_env=checking)
    try:
        if names is None:
            attribution, fields = cause_of(case, pool, k=k, progress=say)
            sig, caveat = signature_of(fields), signature_caveat(case)
        else:
            attribution = attribute(case, pool, [knob_named(n) for n in names], say, k=k)
            sig, caveat = None, "no signature: --knobs ran a subset of the knobs it is taken over"
        if not no_bisect and attribution.reproduces:
            attribution.bisect = run_bisect(case)
            if say:
                say(f"bisector: {bisect_summary(attribution.bisect)}")
    finally:
        pool.close()
    runs = []
    for python in pythons:  # the case's repro.py under each other torch
        if say:
            say(f"confirming on torch {python.torch} ({python.python})")
        runs += confirm.confirm_case(case, [python])
    decision = confirm.decide(runs) if pythons else None
    if as_json:
        confirmed = {"confirmations": [r.to_dict() for r in runs],
                     "confirmed": asdict(decision)} if decision else {}
        from fuzzer.triage import value
        from fuzzer.triage.signature import mechanism_of

        worth = value.classify(case, mechanism_of(attribution))
        click.echo(strict_json({"case": str(case_path), "signature": sig,
                                "signature_caveat": caveat,
                                "attribution": attribution.to_dict(),
                                "needs": attribution.needs(),
                                "value_class": {"number": worth.number, "words": worth.words,
                                                "why": worth.why}, **confirmed}))
    else:
        _print_attribution(case, attribution, sig, caveat)
        if decision is not None:
            _print_confirmations(runs, decision)
    sys.exit(0 if attribution.reproduces else 3)


def cause_lines(case: Case, attribution: Attribution) -> list[str]:
    """What triage says of the cause besides the knobs: the options of its surface it needs,
    where it first diverges, its value class, and the known entry it is, if any."""
    from fuzzer.execute.surface import DEPLOYED
    from fuzzer.triage import known, value
    from fuzzer.triage.locate import Location
    from fuzzer.triage.signature import mechanism_of, signature_fields

    lines = []
    if attribution.surface_knobs():
        lines.append("needs of its surface: " + (", ".join(attribution.needs()) or
                                                 "no single option (taking back any one alone "
                                                 "leaves it)"))
    elif not any(k in DEPLOYED for k in case.recipe.config):
        lines.append("needs of its surface: none (a default compile)")
    if attribution.layout_knobs():
        lines.append("needs of how its inputs are stored: " + (", ".join(attribution.layout())
                                                               or "none"))
    if attribution.stage():
        lines.append(f"stage: it appears in {attribution.stage()}")
    located = Location.from_dict(attribution.root)
    if located is not None:
        lines.append(f"where: {located.summary()}")
    root = mechanism_of(attribution)
    lines.append(value.classify(case, root).line())
    entry = known.match({**signature_fields(case, attribution), "root": root})
    if entry is not None:
        lines.append(f"known: {entry.id} ({entry.state()}): {entry.what[:120]}")
    return lines


def _print_confirmations(runs: list[Run], decision: Decision) -> None:
    """Per torch named with --confirm-with: whether the case's repro.py reproduces there."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="the case's repro.py under each --confirm-with torch")
    for col in ("torch", "python", "repro.py", "s", "it printed"):
        table.add_column(col, overflow="fold")
    for r in runs:
        table.add_row(r.torch, r.python, r.outcome, f"{r.seconds:.0f}",
                      (r.output.splitlines() or [""])[0][:80])
    console = Console(width=160)
    console.print(table)
    console.print(f"a nightly would {'draft it' if decision.drafted else 'not draft it'}: "
                  f"{decision.why}")


def _print_attribution(case: Case, attribution: Attribution, sig: str | None,
                       caveat: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from fuzzer.triage.attribute import bisect_summary

    assert case.verdict is not None  # triage_command refuses a case that records none
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
    for line in cause_lines(case, attribution):
        console.print(line)
    if attribution.bisect is not None:
        console.print(f"bisector: {bisect_summary(attribution.bisect)}")
    if sig is not None:
        console.print(f"signature: {sig}")
    if caveat:
        console.print(f"note: {caveat}")


# ------------------------------------------------------------------ nightly


@main.command("nightly")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
@click.option("--time", "duration", help="Budget for the whole night (e.g. 6h); the campaign "
                                         "runs in the first 80%, raw findings processed beside "
                                         "it.")
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
@click.option("--max-calls", type=click.IntRange(min=1), default=400, show_default=True,
              help="Minimizer oracle calls per finding (as numfuzz minimize); a case whose "
                   "minimizer stops short of its fixpoint carries on the next night.")
@click.option("--max-findings", type=click.IntRange(min=0),
              help="Raw findings minimized in full per night (one per bucket of like raw "
                   "findings; the others are checked against its cause); the rest wait "
                   "[default: no cap: as many as the night's time allows].")
@click.option("--knobs", help="No effect, kept for existing cron lines (names are still "
                              "checked): the nightly always tries every knob, since a cause's "
                              "signature is taken over the full set.")
@click.option("--no-bisect", is_flag=True, help="Skip torch's CompilerBisector for new findings.")
@click.option("--workers", type=click.IntRange(min=1),
              help="Lanes: worker processes, each fuzzing or processing raw findings as the "
                   "backlog asks [default: as run --help says].")
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
@arm_options
@click.option("--search", type=click.Choice(["random", "guided"]), default="random",
              show_default=True, help="The night's campaign search (see run --help).")
@CONFIRM_WITH
def nightly_command(device: str, duration: str | None, cases: int | None, reports: Path,
                    corpus: Path | None, seed: int | None, backend: str, grammar: str, k: int,
                    max_calls: int, max_findings: int | None, knobs: str | None,
                    no_bisect: bool,
                    workers: int | None, timeout: float, policy: str, max_drafts: int,
                    strategies: tuple[str, ...], engine: str, ray_address: str | None,
                    known_file: Path | None, dynamic: bool, mode: str,
                    inductor_config: tuple[str, ...], training: bool,
                    surfaces: tuple[str, ...], plan_file: Path | None, no_malloc_check: bool,
                    search: str, confirm_with: tuple[str, ...]) -> None:
    """Fuzz, minimize, triage, store, draft, recheck; write REPORTS/<date>/SUMMARY.md.

    Exit 0: a clean night; 1: a night with harness errors (SUMMARY.md lists them); 2: bad
    input, an environment numfuzz cannot work in, or a night stopped early."""
    from fuzzer.campaign.settings import Settings
    from fuzzer.gen.strategy import parse_weights
    from fuzzer.nightly.job import run_night
    from fuzzer.nightly.night import NightSettings, night_of, plain_log

    seconds = parse_duration(duration)
    if seconds is None and cases is None:
        raise UserError("give a budget: --time (e.g. 6h) or --cases N")
    writable(reports, "--reports")
    if corpus is not None:
        writable(corpus, "--corpus")
    device = resolve_device(device)
    if workers is None:
        from fuzzer.execute.workers import default_workers

        workers = default_workers(device)
    recipe = recipe_of(backend, inductor_config, dynamic, mode, training, policy, device)
    chosen = surfaces_of(surfaces, pinned_surface(dynamic, mode, training, inductor_config),
                         plan_file)
    weights = parse_weights(strategies, grammar)
    recorded = plan_of(None, plan_file, device, recipe.backend, weights, bool(strategies))
    campaign = Settings(device=device, cases=cases, grammar=grammar, workers=workers,
                        recipe=recipe, timeout=timeout, strategies=weights, search=search)
    settings = NightSettings(reports=reports, campaign=campaign, seconds=seconds, seed=seed,
                             corpus=corpus, k=k, max_calls=max_calls, max_findings=max_findings,
                             bisect=not no_bisect, max_drafts=max_drafts, engine=engine,
                             ray_address=ray_address, surfaces=chosen,
                             pin_strategies=bool(strategies), recorded_plan=recorded)
    # the Ray engine's actors do not start from this environment: it never checks them
    campaign.malloc_check = engine != "ray" and malloc_check_by_default(device, no_malloc_check)
    _knobs(knobs)  # checked, though a night always tries every knob (see --help)
    if confirm_with:
        from fuzzer.triage.confirm import interpreters

        settings.confirm_with = interpreters(confirm_with)  # one line and exit 2 now, not at dawn
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
                     confirm_with: tuple[str, ...], draft_id: str | None,
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
    if ledger:
        ledger_table(reports, measure, confirm_with, as_json)
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
                 as_json: bool) -> None:
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
    for cause in ledger.causes():
        runs = ledger.measure(cause, pythons) if measure else []
        if measure and not as_json:
            log_line(f"{cause.id}: {ledger.measured_state(cause, runs)}")
        rows.append({"id": cause.id, "group": cause.group, "value_class": cause.value_class,
                     "state": cause.state(), "status": cause.status,
                     "matched_by": len(cause.forms), "repro": cause.repro or None,
                     "found_again": refound.get(cause.id, 0),
                     "measured": ledger.measured_state(cause, runs) if measure else None,
                     "runs": [r.to_dict() for r in runs], "mechanism": cause.mechanism})
    if as_json:
        click.echo(strict_json({"ledger": rows}))
        return
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
    import time

    from fuzzer.execute.pool import RunnerPool
    from fuzzer.nightly.drafts import write_draft_for
    from fuzzer.nightly.night import Context, Night, NightSettings
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
        settings = NightSettings(reports=reports, bisect=False, known_file=known_file)
        ctx = Context(settings, Night(time.strftime("%Y-%m-%d"), 1, 0), directory, store, pool,
                      log_line)
        try:
            return write_draft_for(ctx, finding, directory / f"{finding.signature}.md",
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


# ------------------------------------------------------------------ export


@main.command("dashboard")
@click.option("--reports", type=click.Path(file_okay=False, path_type=Path),
              default=Path("reports"), show_default=True)
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the page [default: REPORTS/dashboard.html].")
def dashboard_cmd(reports: Path, out: Path | None) -> None:
    """Write a static HTML page over every night under REPORTS: each cause (class, kind,
    surface, first and last seen, hits per night, upstream state, draft and repro), the latest
    night's queue, and plots over nights. It loads nothing from the network; the nightly
    rewrites it after each night."""
    from fuzzer.report import dashboard
    from fuzzer.report.store import DB_NAME

    if not (reports / DB_NAME).exists():
        raise UserError(f"{reports}: no findings store ({DB_NAME}) here; run numfuzz nightly "
                        "first, or pass --reports")
    if out is not None:
        writable(out.parent, "--out")
    try:  # a store of another schema is an InputError: one line, exit 2 (cli.common)
        path = dashboard.write(reports, out)
    except ImportError as err:
        raise UserError(f"the dashboard needs matplotlib ({err}); pip install matplotlib") \
            from None
    click.echo(str(path))


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
        # A cause upstream closed as expected behaviour is not a bug to wait for a fix of.
        findings = [f for f in store.findings(status="open")
                    if f.case_path and f.upstream_state != "wontfix"]
    for finding in findings:
        click.echo(f"wrote {pytest_module(finding, out)}")
    click.echo(f"{len(findings)} open root causes exported; run: python -m pytest {out}")

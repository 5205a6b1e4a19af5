"""``numfuzz nightly``: what cron runs (exit 0 for a clean night, 1 for one with harness errors,
2 for one stopped early): fuzz, minimize, triage, store, draft, recheck (``nightly.job``).
``--confirm-with PYTHON`` drafts only what every named torch reproduces. Bad input is one line on
stderr and exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fuzzer.cli.common import (
    CONFIRM_WITH,
    UserError,
    arm_options,
    campaign_options,
    compile_options,
    knob_names,
    main,
    malloc_check_by_default,
    parse_duration,
    pinned_surface,
    plan_of,
    recipe_of,
    resolve_device,
    surfaces_of,
    writable,
)


@main.command("nightly")
@campaign_options
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
@click.option("--max-drafts", type=click.IntRange(min=0), default=5, show_default=True,
              help="New root causes drafted per night, strongest first; the rest wait.")
@click.option("--known", "known_file", type=click.Path(dir_okay=False, exists=True,
                                                       path_type=Path),
              help="Known causes (TOML, see fuzzer/known.toml, the default): hits, not drafts.")
@compile_options
@arm_options
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
    if knob_names(knobs):  # checked, and said: a night always tries every knob (see --help)
        click.echo("nightly: --knobs has no effect (a night takes every cause over the full "
                   "knob set); the names given were checked", err=True)
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

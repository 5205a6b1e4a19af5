"""``numfuzz locate``: which line of my model does compiled go wrong on (``triage.locate``)."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fuzzer.cli.cases import SURFACE_OPTION, on_surface
from fuzzer.cli.common import (
    follow_malloc_check,
    log_line,
    main,
    resolve_device,
    strict_json,
    trusted_on_command_line,
)

if TYPE_CHECKING:
    from fuzzer.corpus.case import Case
    from fuzzer.judge.verdict import Verdict
    from fuzzer.triage.attribute import Attribution
    from fuzzer.triage.locate import Location


@main.command("locate")
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--backend", help="For a model file: the torch.compile backend (default inductor; "
                                "a case file keeps its own).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="For model files: seed before building the model and drawing inputs.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda", "case"]), default="case",
              show_default=True, help="Where to run; 'case' uses the case's (a model file: auto).")
@click.option("--timeout", type=float, default=300, show_default=True)
@click.option("--every", is_flag=True,
              help="Compile the prefix at every op of the path (each op's errors in the table), "
                   "not only those the bisection needs.")
@click.option("--no-triage", is_flag=True,
              help="Do not try the knobs on the located prefix (which one makes it vanish).")
@SURFACE_OPTION
@click.option("--json", "as_json", is_flag=True)
def locate_command(target: Path, backend: str | None, seed: int, device: str, timeout: float,
                   every: bool, no_triage: bool, surface: str | None, as_json: bool) -> None:
    """The first op of TARGET (a model file or a case file) whose compiled value is further from
    float64 than eager's, on the user's own source line: prefixes of the graph compiled and
    judged by the verdict rule, bisected, the answer confirmed, then the knob that makes it
    vanish on the located prefix.

    Exit 1: it diverges (the output says where, or why it could not be pinned to one op); 3: it
    does not diverge; 2: bad input, or it could not be judged."""
    from fuzzer.execute.pool import RunnerPool
    from fuzzer.execute.workers import LocalRunner
    from fuzzer.triage.locate import locate, prefix_case
    from fuzzer.user.capture import load_target

    began = time.monotonic()
    say = (lambda text: None) if as_json else log_line
    case = on_surface(load_target(target, seed), surface)
    if backend is not None:
        case.recipe = replace(case.recipe, backend=trusted_on_command_line(backend))
    if device != "case":
        case.device = resolve_device(device)
    checking = follow_malloc_check(case.origin, case.verdict.kind if case.verdict else "")
    runner = LocalRunner(case.device, timeout=timeout, warmup=case.recipe.warms_up,
                    env=checking or None)
    pool = RunnerPool({case.device: runner}, timeout=timeout, warmup=case.recipe.warms_up,
                      base_env=checking)
    try:
        say(f"judging {target} ({len(case.graph)} ops)")
        case.verdict = runner.run(case.task()).verdict
        _must_diverge(target, case.verdict)
        say(f"it diverges: {case.verdict.summary()}; locating")
        location = locate(case, runner, progress=say, fresh=False, every=every)
        attribution = None
        if location.node is not None and location.confirmed and not no_triage:
            say(f"trying each knob on the prefix ending at {location.label}")
            attribution = _triage(prefix_case(case, location.node), runner, pool)
    finally:
        pool.close()
        runner.close()
    seconds = time.monotonic() - began
    if as_json:
        click.echo(strict_json({"target": str(target), "verdict": case.verdict.to_dict(),
                                "location": location.to_dict(),
                                "vanishes_with": attribution.vanishing() if attribution else None,
                                "stage": attribution.stage() if attribution else None,
                                "seconds": round(seconds, 1)}))
    else:
        _print_location(case, location, attribution, seconds)
    sys.exit(1)


def _must_diverge(target: Path, verdict: Verdict) -> None:
    """Exit 3 where there is nothing to locate, 2 where it could not be judged."""
    from fuzzer.cli.cases import could_not_judge, judged

    if not judged(verdict):
        raise could_not_judge(str(target), verdict)
    if not verdict.is_finding:
        click.echo(f"{target}: does not diverge ({verdict.summary()}): nothing to locate")
        sys.exit(3)


def _triage(cut: Case, runner, pool) -> Attribution | None:
    """The knobs on the located prefix, one run each: which makes it vanish there."""
    from fuzzer.triage.attribute import attribute

    cut.verdict = runner.run(cut.task(recipe=cut.recipe.fresh())).verdict
    if not cut.verdict.is_finding:
        return None
    return attribute(cut, pool, k=1)


def _print_location(case: Case, location: Location, attribution: Attribution | None,
                    seconds: float) -> None:
    from rich.console import Console
    from rich.table import Table

    assert case.verdict is not None  # locate_command judged the case before locating
    console = Console(width=160)
    console.print(f"[bold]{case.verdict.summary()}[/]")
    probed = {p.node: p for p in location.probes}
    table = Table(title=f"the ops on the way to the diverging output ({len(location.path)}; "
                        f"{len(location.probes)} prefixes compiled)")
    for col in ("#", "op", "where", "module", "eager (ulps)", "compiled (ulps)", "its prefix"):
        table.add_column(col, overflow="fold")
    for i, node in enumerate(location.path, 1):
        p = probed.get(node)
        source = p.source if p else case.origin.get("sources", {}).get(str(node), {})
        where = f"{Path(source['file']).name}:{source['line']}" if source.get("line") else "-"
        mark = "  [bold red]<- first diverges[/]" if node == location.node else ""
        table.add_row(str(i), case.graph.node(node).label + mark, where,
                      source.get("module", "") or ("(model)" if source else "-"),
                      _ulps(p.eager_ulps if p else None), _ulps(p.compiled_ulps if p else None),
                      p.kind if p else "not compiled")
    console.print(table)
    console.print(_answer(location))
    if attribution is not None:
        console.print(f"on its prefix, it vanishes with: "
                      f"{', '.join(attribution.vanishing()) or 'no knob'}")
    console.print(f"{len(location.probes)} prefixes compiled in {seconds:.1f} s")


def _answer(location: Location) -> str:
    """The line a person reads first."""
    if location.node is None:
        return f"[bold]not pinned to one op[/]: {location.note}"
    found = location.found
    source = found.source if found is not None else {}
    where = f" at {source['file']}:{source['line']}" if source.get("line") else ""
    code = f"\n    {source['code']}" if source.get("code") else ""
    module = f"\n    in module {source['module']}" if source.get("module") else ""
    state = "confirmed: its prefix diverges and the prefixes of the ops it reads do not" \
        if location.confirmed else f"NOT confirmed: {location.note}"
    return (f"[bold red]first diverges at {location.label}[/]{where} ({location.kind}){code}"
            f"{module}\n{state}")


def _ulps(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"

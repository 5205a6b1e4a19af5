"""``numfuzz run``: a campaign with live progress (rich on a TTY, plain lines under cron)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fuzzer.cli.common import (
    UserError,
    arm_options,
    campaign_options,
    compile_options,
    is_tty,
    main,
    malloc_check_by_default,
    parse_duration,
    pinned_surface,
    plan_of,
    recipe_of,
    resolve_device,
    stamped,
    strict_json,
    supported_dtypes,
    surfaces_of,
    writable,
)
from fuzzer.device import Device
from fuzzer.gen.strategy import DRAWS
from fuzzer.judge.kinds import COUNTED, Kind

if TYPE_CHECKING:  # the command imports what it uses when it runs: --help stays light
    from rich.table import Table

    from fuzzer.campaign.loop import Outcome, Summary
    from fuzzer.campaign.settings import Settings


@main.command()
@campaign_options
@click.option("--cases", type=click.IntRange(min=1), help="Stop after this many cases.")
@click.option("--time", "duration", help="Stop after this long (90s, 30m, 8h).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--dtype", type=click.Choice(["all", "fp32", "bf16", "fp16"]), default="all",
              show_default=True)
@click.option("--draws", type=click.IntRange(1, 64), default=DRAWS, show_default=True,
              help="Input draws per compiled model.")
@click.option("--workers", type=click.IntRange(min=1),
              help="Worker processes [default: $NUMFUZZ_WORKERS where set; else on the CPU one "
                   "per core, as many as memory holds at 3 GiB each; on CUDA, as many per GPU "
                   "as its memory and the cores allow, at most 4].")
@click.option("--gpus", help="CUDA: which visible GPUs to use, e.g. 0,1 (default: all); workers "
                             "are dealt out round-robin, so several may share one GPU.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("corpus"),
              show_default=True)
@click.option("--resume", is_flag=True, help="Continue the campaign recorded in --out.")
@click.option("--keep-benign", is_flag=True,
              help="Also save weak flips and benign differences (not findings) to --out.")
@click.option("--seed-model", type=click.Path(dir_okay=False, path_type=Path),
              help="Mutate this KernelBench-style model file instead of generating models.")
@click.option("--allow-mixed-versions", is_flag=True,
              help="Ray: fuzz on a fleet whose nodes run different torch versions.")
@compile_options
@arm_options
@click.option("--reports", type=click.Path(file_okay=False, path_type=Path),
              help="Split the time over the arms by the yields this nightly store records "
                   "(default: by the catalogue's priors alone).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def run(device: str, cases: int | None, duration: str | None, seed: int, grammar: str,
        dtype: str, draws: int, workers: int | None, gpus: str | None, out: Path, backend: str,
        timeout: float, resume: bool, keep_benign: bool, policy: str,
        strategies: tuple[str, ...], seed_model: Path | None, engine: str,
        ray_address: str | None, allow_mixed_versions: bool, dynamic: bool, mode: str,
        inductor_config: tuple[str, ...], training: bool, surfaces: tuple[str, ...],
        plan_file: Path | None, no_malloc_check: bool, reports: Path | None, search: str,
        as_json: bool) -> None:
    """Fuzz: generate models, run eager/compiled/float64, save findings to --out.

    Exit 0: the campaign ran and found nothing; 1: it saved findings; 2: bad input, an output
    folder it cannot write, a campaign stopped early (everything found before is kept), or one
    that could judge none of its cases (each a skip or a harness error)."""
    from fuzzer.campaign.engine import Engine
    from fuzzer.campaign.settings import Settings
    from fuzzer.execute.workers import default_workers
    from fuzzer.gen.strategy import parse_weights

    seconds = parse_duration(duration)
    writable(out, "--out")
    if cases is None and seconds is None:
        cases = 50
    device = resolve_device(device)
    chosen = parse_gpus(gpus)
    if chosen is not None and not Device(device).is_cuda:
        raise UserError(f"--gpus {gpus}: this run is on the {device.upper()}; --gpus picks CUDA "
                        "devices (give --device cuda, or leave out --gpus)")
    if workers is None:
        workers = default_workers(device, chosen)
    recipe = recipe_of(backend, inductor_config, dynamic, mode, training, policy, device)
    chosen_surfaces = surfaces_of(surfaces, pinned_surface(dynamic, mode, training,
                                                           inductor_config), plan_file, seed_model)
    weights = parse_weights(strategies, grammar)
    settings = Settings(out=out, device=device, cases=cases, seconds=seconds, seed=seed,
                        grammar=grammar, dtypes=supported_dtypes(device, dtype), draws=draws,
                        workers=workers, gpus=chosen, recipe=recipe, timeout=timeout,
                        resume=resume, keep_benign=keep_benign, strategies=weights,
                        search=search,
                        plan=plan_of(chosen_surfaces, plan_file, device, recipe.backend, weights,
                                     bool(strategies), reports))
    # the Ray engine's actors do not start from this environment: it never checks them
    settings.malloc_check = engine != "ray" and malloc_check_by_default(device, no_malloc_check)
    if seed_model is not None:
        from fuzzer.user.capture import capture_file

        captured = capture_file(seed_model, seed)
        settings.seed_graph, settings.seed_inputs = captured.graph, captured.inputs
        settings.dtypes, settings.seed_model = (captured.dtype,), str(seed_model)
    report = CampaignReport(settings, quiet=as_json)
    running = Engine.of(engine, address=ray_address, allow_mixed=allow_mixed_versions)
    try:
        summary = report.run(running.run)
    except KeyboardInterrupt as err:  # Ctrl-C or a deadline's SIGINT: --json still says
        partial = getattr(err, "summary", None)  # what ran (the group's hint follows)
        if as_json and partial is not None:
            click.echo(strict_json(partial.to_dict()))
        raise
    fleet = running.report
    # Nothing judged is nothing clean: every case a skip or a harness error.
    unjudged = " ".join((summary.first_skip or next(iter(summary.harness_messages), "")).split()) \
        if summary.cases and not summary.judged else ""
    if as_json:
        click.echo(strict_json({**summary.to_dict(), **({"fleet": fleet} if fleet else {}),
                                **({"reason": unjudged} if unjudged else {})}))
    elif fleet:
        click.echo(stamped(f"fleet: {fleet}"))
    if summary.stopped:  # everything found so far is saved; the run itself did not finish
        raise UserError(f"campaign {summary.stopped}")
    if unjudged:
        raise UserError(f"{seed_model or 'the campaign'}: could not judge any of its "
                        f"{summary.cases} cases, so it is not clean: {unjudged}")
    sys.exit(1 if summary.findings else 0)


def parse_gpus(text: str | None) -> tuple[int, ...] | None:
    """``--gpus 0,1`` -> (0, 1)."""
    if text is None:
        return None
    try:
        picks = tuple(int(g) for g in text.split(",") if g.strip())
    except ValueError:
        raise UserError(f"--gpus takes GPU indices such as 0,1, got {text!r}") from None
    if not picks:
        raise UserError("--gpus names no GPU")
    return picks


class CampaignReport:
    """Live progress (rich on a TTY, plain log lines under cron) and the closing table."""

    def __init__(self, settings: Settings, quiet: bool = False) -> None:
        self.settings = settings
        self.quiet = quiet
        self.tty = is_tty() and not quiet

    def log(self, text: str) -> None:
        click.echo(stamped(text), err=self.quiet)

    def run(self, run_campaign: Callable[..., Summary]) -> Summary:
        s = self.settings
        budget = f"{s.cases} cases" if s.cases else f"{s.seconds:.0f}s"
        source = f"seed-model={s.seed_model}" if s.seed_model else f"grammar={s.grammar}"
        self.log(f"numfuzz run: device={s.device} {source} dtypes={','.join(s.dtypes)} "
                 f"workers={s.workers} budget={budget} out={s.out}")
        if self.tty:
            summary = self._run_rich(run_campaign)
        else:
            summary = run_campaign(s, on_outcome=self._log_outcome)
        self._closing(summary)
        return summary

    def _log_outcome(self, outcome: Outcome) -> None:
        from fuzzer.campaign.harness import is_harness_error

        v = outcome.verdict
        if v.is_finding:
            tag = "" if outcome.new else " (already in corpus)"
            self.log(f"case {outcome.index}: {v.summary()} -> {outcome.path}{tag}")
        elif is_harness_error(v):
            self.log(f"case {outcome.index}: HARNESS ERROR ({v.message}); going on")
        elif v.kind == Kind.SKIP:
            self.log(f"case {outcome.index}: skipped ({v.message})")
        elif v.kind == Kind.EXPECTED:
            self.log(f"case {outcome.index}: {v.summary()}; not a finding")
        elif v.kind in COUNTED:
            self.log(f"case {outcome.index}: {v.kind}, not a finding")
        else:
            self.log(f"case {outcome.index}: ok")

    def _run_rich(self, run_campaign: Callable[..., Summary]) -> Summary:
        from collections import Counter

        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from fuzzer.campaign.harness import FIRST, is_harness_error

        s = self.settings
        counts: Counter = Counter()
        start = time.monotonic()
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                      TimeRemainingColumn(), TextColumn("{task.fields[found]}")) as progress:
            total = s.cases if s.cases else s.seconds
            bar = progress.add_task("fuzzing", total=total, rate="", found="no findings yet")

            def update(outcome: Outcome) -> None:
                counts["cases"] += 1
                if is_harness_error(outcome.verdict):
                    counts["harness errors"] += 1
                    if counts["harness errors"] <= FIRST:  # the first ones in full
                        progress.console.print(f"[yellow]case {outcome.index}: "
                                               f"{outcome.verdict.message}[/]")
                if outcome.verdict.kind in COUNTED:
                    counts[f"{outcome.verdict.kind} (not findings)"] += 1
                if outcome.verdict.is_finding:
                    counts[outcome.verdict.kind] += 1
                    progress.console.print(f"[red]{outcome.verdict.summary()}[/] -> {outcome.path}")
                elapsed = time.monotonic() - start
                found = ", ".join(f"{k}: {n}" for k, n in counts.items() if k != "cases")
                progress.update(bar, completed=counts["cases"] if s.cases else elapsed,
                                rate=f"{60 * counts['cases'] / max(elapsed, 1e-9):.1f} cases/min",
                                found=found or "no findings yet")

            return run_campaign(s, on_outcome=update)

    def _closing(self, summary: Summary) -> None:
        if self.quiet:
            return
        from rich.console import Console
        from rich.table import Table

        table = Table(title="numfuzz run summary")
        table.add_column("what")
        table.add_column("value", justify="right")
        table.add_row("cases", str(summary.cases))
        table.add_row("cases/min", f"{summary.cases_per_min:.1f}")
        table.add_row("skipped (eager failed, runs changed shape, out of memory)",
                      str(summary.skipped))
        if summary.out_of_memory:
            table.add_row("  out of GPU memory", str(summary.out_of_memory))
        table.add_row("harness errors (numfuzz's own failures)", str(summary.harness_errors))
        for message in summary.harness_messages:
            table.add_row("  harness error", message[:70])
        if summary.harness_errors:
            table.add_row("  saved for replay in", str(self.settings.out / "harness"))
        for kind, n in sorted(summary.findings.items()):
            table.add_row(f"findings: {kind}", str(n))
        table.add_row("weak flips (within eager's own rounding; not findings)",
                      str(summary.counted.get(Kind.WEAK_FLIP, 0)))
        table.add_row("benign (compiled at least as close to float64)",
                      str(summary.counted.get(Kind.BENIGN, 0)))
        table.add_row("expected by default (vanish with emulate_precision_casts)",
                      str(summary.counted.get(Kind.EXPECTED, 0)))
        table.add_row("elapsed", f"{summary.elapsed:.0f}s")
        console = Console(force_terminal=self.tty, width=100)
        console.print(table)
        for hint in summary.to_dict()["hints"]:
            console.print(f"hint: {hint}")
        if summary.strategies:
            console.print(strategy_table(summary))
        for line in next_steps(self.settings, summary):
            click.echo(line)


def next_steps(settings: Settings, summary: Summary) -> list[str]:
    """What to run next: on the strongest finding, replay, minimize and triage; with none, a
    longer campaign under another seed."""
    import shlex

    if summary.stopped:
        return []
    if not summary.strongest:
        return ["no findings; next: a longer campaign under another seed, e.g. "
                f"numfuzz run --seed {settings.seed + 1} --time 1h --out {settings.out}"]
    strongest = summary.strongest_verdict
    assert strongest is not None  # Summary.add sets it with strongest
    case = shlex.quote(summary.strongest)
    minimized = shlex.quote(str(Path("reports") / "min" / Path(summary.strongest).stem))
    backend = settings.recipe.backend  # a module:function one must be trusted again
    numfuzz = f"numfuzz --trust-backend {shlex.quote(backend)}" if ":" in backend else "numfuzz"
    return [f"strongest finding: {strongest.summary()}",
            "next: replay it, shrink it to a standalone repro.py, find the knob that makes it "
            f"vanish (all findings: numfuzz corpus list {shlex.quote(str(settings.out))})",
            f"  {numfuzz} replay {case}",
            f"  {numfuzz} minimize {case} -o {minimized}",
            f"  {numfuzz} triage {minimized}/case.pt"]


def strategy_table(summary: Summary) -> Table:
    """Cases, findings and worker time per strategy: where the campaign's time went."""
    from rich.table import Table

    table = Table(title="by strategy")
    for col in ("strategy", "cases", "findings", "kinds", "worker s", "s/case"):
        table.add_column(col, justify="left" if col in ("strategy", "kinds") else "right")
    for name, spent in sorted(summary.strategies.items()):
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(spent.kinds.items()))
        table.add_row(name, str(spent.cases), str(spent.findings), kinds,
                      f"{spent.seconds:.0f}", f"{spent.seconds / max(spent.cases, 1):.1f}")
    return table

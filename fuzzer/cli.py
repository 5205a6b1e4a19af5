"""The ``numfuzz`` command line. Thin: parse, call one stage, present the result.

Exit codes: 0 ok, 1 findings present (for ``replay``: the divergence reproduces), 2 usage or input
error. Every user error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from fuzzer import ops
from fuzzer.case import CaseError


class UserError(click.ClickException):
    """A problem with what the user gave us: one line, exit 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"numfuzz: error: {self.message}", err=True)


def friendly(fn: Callable) -> Callable:
    """Turn the pipeline's validation errors into UserError (exit 2, one line)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (CaseError, ops.InvalidGraph) as err:
            raise UserError(str(err)) from None
        except KeyboardInterrupt:
            click.echo("numfuzz: interrupted; everything found so far is saved", err=True)
            sys.exit(130)

    return wrapper


def parse_duration(text: str | None) -> float | None:
    """'90s', '30m', '8h', '1h30m' -> seconds."""
    if text is None:
        return None
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?",
                         text.strip())
    if not text.strip() or not parts or not any(parts.groups()):
        raise UserError(f"cannot read duration {text!r}: use e.g. 90s, 30m, 8h or 1h30m")
    h, m, s = (float(g) if g else 0.0 for g in parts.groups())
    return h * 3600 + m * 60 + s


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda asked for, but this torch sees no CUDA device")
    return device


def supported_dtypes(device: str, wanted: str) -> tuple[str, ...]:
    if wanted != "all":
        return ({"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}.get(wanted, wanted),)
    return ("float32", "bfloat16", "float16")


def strict_json(value: Any) -> str:
    """JSON that strict parsers accept: inf/NaN (a nonfinite finding's values) become strings."""

    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(value), indent=2, allow_nan=False)


def is_tty() -> bool:
    return sys.stdout.isatty()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="numfuzz")
def main() -> None:
    """Differential fuzzer for torch.compile numerics: eager vs Inductor vs float64."""


# ------------------------------------------------------------------ run


@main.command()
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
@click.option("--cases", type=click.IntRange(min=1), help="Stop after this many cases.")
@click.option("--time", "duration", help="Stop after this long (90s, 30m, 8h).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--grammar", type=click.Choice(["mixed", "vision", "attention"]), default="mixed",
              show_default=True)
@click.option("--dtype", type=click.Choice(["all", "fp32", "bf16", "fp16"]), default="all",
              show_default=True)
@click.option("--draws", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Input draws per compiled model.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("corpus"),
              show_default=True)
@click.option("--backend", default="inductor", show_default=True,
              help="torch.compile backend: inductor, aot_eager, eager, or module:function.")
@click.option("--timeout", type=float, default=300, show_default=True,
              help="Seconds per case before the worker is killed and the case is a timeout.")
@click.option("--resume", is_flag=True, help="Continue the campaign recorded in --out.")
@click.option("--seed-model", type=click.Path(dir_okay=False, path_type=Path),
              help="Mutate this KernelBench-style model file instead of generating models.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@friendly
def run(device: str, cases: int | None, duration: str | None, seed: int, grammar: str,
        dtype: str, draws: int, workers: int, out: Path, backend: str, timeout: float,
        resume: bool, seed_model: Path | None, as_json: bool) -> None:
    """Fuzz: generate models, run eager/compiled/float64, save findings to --out."""
    from fuzzer.campaign import Settings, run_campaign

    seconds = parse_duration(duration)
    if cases is None and seconds is None:
        cases = 50
    device = resolve_device(device)
    settings = Settings(out=out, device=device, cases=cases, seconds=seconds, seed=seed,
                        grammar=grammar, dtypes=supported_dtypes(device, dtype), draws=draws,
                        workers=workers, backend=backend, timeout=timeout, resume=resume)
    if seed_model is not None:
        from fuzzer.capture import capture_file

        captured = capture_file(seed_model, seed)
        settings.seed_graph, settings.seed_inputs = captured.graph, captured.inputs
        settings.dtypes, settings.seed_model = (captured.dtype,), str(seed_model)
    report = CampaignReport(settings, quiet=as_json)
    summary = report.run(run_campaign)
    if as_json:
        click.echo(strict_json(summary.to_dict()))
    sys.exit(1 if summary.findings else 0)


class CampaignReport:
    """Live progress (rich on a TTY, plain log lines under cron) and the closing table."""

    def __init__(self, settings: Any, quiet: bool = False) -> None:
        self.settings = settings
        self.quiet = quiet
        self.tty = is_tty() and not quiet

    def log(self, text: str) -> None:
        click.echo(f"{time.strftime('%H:%M:%S')} {text}", err=self.quiet)

    def run(self, run_campaign: Callable) -> Any:
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

    def _log_outcome(self, outcome: Any) -> None:
        v = outcome.verdict
        if v.is_finding:
            tag = "" if outcome.new else " (already in corpus)"
            self.log(f"case {outcome.index}: {v.summary()} -> {outcome.path}{tag}")
        elif v.kind == "skip":
            self.log(f"case {outcome.index}: skipped ({v.message})")
        else:
            self.log(f"case {outcome.index}: ok")

    def _run_rich(self, run_campaign: Callable) -> Any:
        from collections import Counter

        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        s = self.settings
        counts: Counter = Counter()
        start = time.monotonic()
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                      TimeRemainingColumn(), TextColumn("{task.fields[found]}")) as progress:
            total = s.cases if s.cases else s.seconds
            bar = progress.add_task("fuzzing", total=total, rate="", found="no findings yet")

            def update(outcome: Any) -> None:
                counts["cases"] += 1
                if outcome.verdict.is_finding:
                    counts[outcome.verdict.kind] += 1
                    progress.console.print(f"[red]{outcome.verdict.summary()}[/] -> {outcome.path}")
                elapsed = time.monotonic() - start
                found = ", ".join(f"{k}: {n}" for k, n in counts.items() if k != "cases")
                progress.update(bar, completed=counts["cases"] if s.cases else elapsed,
                                rate=f"{60 * counts['cases'] / max(elapsed, 1e-9):.1f} cases/min",
                                found=found or "no findings yet")

            return run_campaign(s, on_outcome=update)

    def _closing(self, summary: Any) -> None:
        if self.quiet:
            return
        from rich.console import Console
        from rich.table import Table

        table = Table(title="numfuzz run summary")
        table.add_column("what")
        table.add_column("value", justify="right")
        table.add_row("cases", str(summary.cases))
        table.add_row("cases/min", f"{summary.cases_per_min:.1f}")
        table.add_row("skipped (eager error or nondeterministic)", str(summary.skipped))
        for kind, n in sorted(summary.findings.items()):
            table.add_row(f"findings: {kind}", str(n))
        table.add_row("elapsed", f"{summary.elapsed:.0f}s")
        Console(force_terminal=self.tty, width=100).print(table)


# ------------------------------------------------------------------ replay


@main.command()
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda", "case"]), default="case",
              show_default=True, help="Where to replay; 'case' uses the device it was found on.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="For model files: seed before building the model and drawing inputs.")
@click.option("--timeout", type=float, default=300, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@friendly
def replay(target: Path, device: str, seed: int, timeout: float, as_json: bool) -> None:
    """Re-run a case file (or a model .py file) and print the verdict table."""
    from fuzzer.replay import load_target, replay_case

    case = load_target(target, seed)
    if device != "case":
        case.device = resolve_device(device)
    verdict, outputs = replay_case(case, timeout=timeout)
    if as_json:
        click.echo(strict_json({"case": str(target), "verdict": verdict.to_dict()}))
    else:
        from fuzzer.replay import print_verdict

        print_verdict(case, verdict, outputs)
    sys.exit(1 if verdict.is_finding else 0)


# ------------------------------------------------------------------ corpus


@main.group()
def corpus() -> None:
    """Inspect the corpus of case files."""


@corpus.command("list")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path),
                default=Path("corpus"))
@click.option("--json", "as_json", is_flag=True)
@friendly
def corpus_list(directory: Path, as_json: bool) -> None:
    """What has been found: kind, output, ops, dtype, device, age."""
    from fuzzer.replay import corpus_rows

    if not directory.is_dir():
        raise UserError(f"{directory}: no such corpus directory")
    rows = corpus_rows(directory)
    if as_json:
        click.echo(strict_json(rows))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{directory}: {len(rows)} case files")
    for col in ("file", "kind", "output", "ops", "dtype", "device", "age"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["file"], r["kind"], str(r["output"]), str(r["ops"]), r["dtype"],
                      r["device"], r["age"])
    Console(width=140).print(table)


# ------------------------------------------------------------------ minimize


@main.command()
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path),
              help="Output directory (default reports/min/<case id>/).")
@click.option("--k", "k", type=click.IntRange(1, 20), default=3, show_default=True,
              help="The case must reproduce k/k before and after.")
@click.option("--max-calls", type=click.IntRange(min=1), default=400, show_default=True)
@click.option("--time", "duration", help="Wall-time budget (e.g. 10m).")
@click.option("--corpus", type=click.Path(file_okay=False, path_type=Path),
              default=Path("corpus"), show_default=True, help="Where slips are saved.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="For model files: seed before building the model and drawing inputs.")
@click.option("--timeout", type=float, default=300, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@friendly
def minimize(target: Path, out: Path | None, k: int, max_calls: int, duration: str | None,
             corpus: Path, seed: int, timeout: float, as_json: bool) -> None:
    """Shrink a divergence to a minimal case.pt + standalone repro.py."""
    from fuzzer.minimize import minimize as shrink
    from fuzzer.replay import load_target
    from fuzzer.repro import write_repro
    from fuzzer.workers import Runner

    seconds = parse_duration(duration)
    case = load_target(target, seed)
    runner = Runner(case.device, timeout=timeout, warmup=case.backend == "inductor")
    log_lines: list[str] = []

    def progress(text: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {text}"
        log_lines.append(line)
        if not as_json:
            click.echo(line, err=True)

    try:
        if target.suffix == ".py":
            case = _captured_divergence(case, runner, progress)
        out = out or Path("reports") / "min" / case.digest()[:12]
        result = shrink(case, runner, k=k, max_calls=max_calls, seconds=seconds,
                        corpus=corpus, progress=progress)
    finally:
        runner.close()
    out.mkdir(parents=True, exist_ok=True)
    result.case.save(out / "case.pt")
    repro = write_repro(result.case, out)
    rows = result.table()
    log_lines += [f"{what}: {before} -> {after}" if before else f"{what}: {after}"
                  for what, before, after in rows]
    (out / "minimize.log").write_text("\n".join(log_lines) + "\n")
    if as_json:
        click.echo(strict_json({"case": str(out / "case.pt"), "repro": str(repro),
                                "verdict": result.case.verdict.to_dict(),
                                **{what: after for what, _, after in rows}}))
    else:
        _minimize_table(result, out, repro)
    sys.exit(0)


def _captured_divergence(case: Any, runner: Any, progress: Callable) -> Any:
    """A model file's case, after checking it diverges the way the file itself does."""
    from fuzzer.capture import verify_capture

    check = verify_capture(case, runner)
    progress(check.message)
    if not check.reproduces:
        raise UserError(check.message)
    return check.case


def _minimize_table(result: Any, out: Path, repro: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"minimized: {result.case.verdict.summary()}")
    for col in ("", "before", "after"):
        table.add_column(col)
    for row in result.table():
        table.add_row(*row)
    console = Console(width=120)
    console.print(table)
    console.print(f"wrote {out / 'case.pt'}, {repro}, {out / 'minimize.log'}")
    console.print(f"run it: python {repro}")


from fuzzer import triage_cli  # noqa: E402  (its commands: triage, nightly, findings)

triage_cli.register(main)

"""``numfuzz replay``, ``corpus list`` and ``minimize``: one case (or model file) at a time."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fuzzer.cli.common import (
    UserError,
    follow_malloc_check,
    main,
    parse_duration,
    resolve_device,
    stamped,
    strict_json,
    writable,
)
from fuzzer.device import Device
from fuzzer.execute.surface import CATALOGUE

if TYPE_CHECKING:  # the commands import what they use when they run: --help stays light
    from rich.table import Table

    from fuzzer.corpus.case import Case
    from fuzzer.execute.pool import TaskRunner
    from fuzzer.execute.task import RunResult, Task
    from fuzzer.execute.workers import LocalRunner
    from fuzzer.judge.details import Element
    from fuzzer.judge.verdict import OutputVerdict, Verdict
    from fuzzer.reduce.minimize import MinimizeResult


# How each differing element reads in a verdict table, and its colour.
ROLES = {"strong": ("strong evidence", "bold red"), "weak": ("regress, weak", "yellow"),
         "regress": ("regress", "red"), "benign": ("benign", "green")}
LEGEND = ("[bold red]strong evidence[/]: compiled further from float64 than eager, float64 clear "
          "of the boundary beyond eager's own noise (what makes the finding); [yellow]regress, "
          "weak[/]: further, but within eager's noise; [green]benign[/]: compiled at least as "
          "close to float64 as eager")


def print_verdict(case: Case, verdict: Verdict, outputs: dict, title: str = "") -> None:
    """The verdict, a row per output (named as in repro.py), and the differing elements of each,
    every element marked as strong evidence, a weak regression or benign."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=120)
    console.print(f"[bold]{escape(title + verdict.summary())}[/]  ({len(case.graph)} ops, "
                  f"{case.dtype}, {case.device}, backend {case.recipe.backend})")
    if Device(case.device).is_cuda and case.recipe.flags is not None:
        console.print(f"torch.backends flags: {case.recipe.flags.label()}")
    if verdict.sdpa:
        console.print(f"eager's scaled_dot_product_attention ran on {', '.join(verdict.sdpa)}")
    table = Table(title="outputs")
    for col in ("#", "value", "dtype", "verdict", "detail"):
        table.add_column(col)
    for o in verdict.outputs:
        d = o.details
        detail = d.reason or ""
        if d.count is not None:
            strong = f", {d.strong} strong" if d.strong is not None else ""
            detail = f"{d.count}/{'?' if d.total is None else d.total} differ{strong} " + detail
        table.add_row(str(o.output), value_name(case, o), o.dtype, _styled_kind(o.kind),
                      escape(detail.strip()))
    console.print(table)
    shown = False
    for o in verdict.outputs:
        elements = o.details.elements
        if elements:
            console.print(_element_table(case, o, elements))
            shown = True
    if shown:
        console.print(LEGEND)


def _element_table(case: Case, output: OutputVerdict, elements: list[Element]) -> Table:
    from rich.table import Table

    from fuzzer.judge.verdict import ulps_text

    table = Table(title=f"{value_name(case, output)} (output {output.output}): differing "
                        "elements")
    for col in ("index", "eager", "compiled", "float64", "evidence", "ulps from boundary",
                "eager's noise (ulps)"):
        table.add_column(col)
    for e in elements:
        label, style = ROLES[_role(output.kind, e)]
        measured = e.distance
        table.add_row(str(tuple(e.index)), _number(e.eager), _number(e.compiled),
                      _number(e.fp64), f"[{style}]{label}[/]",
                      ulps_text(measured.ulps) if measured else "",
                      ulps_text(measured.eager_noise_ulps) if measured else "")
    return table


def _role(kind: str, element: Element) -> str:
    """strong, weak, regress or benign: what one differing element says (``ROLES``)."""
    from fuzzer.judge.kinds import Kind

    if element.regresses is None:  # a float output's element: the output's kind says it
        return "benign" if kind == Kind.BENIGN else "regress"
    if not element.regresses:
        return "benign"
    return "strong" if element.strong else "weak"


def _styled_kind(kind: str) -> str:
    from fuzzer.judge.kinds import COUNTED, SEVERITY, Kind

    style = "bold red" if kind in SEVERITY else "yellow" if kind == Kind.WEAK_FLIP \
        else "green" if kind in COUNTED else ""
    return f"[{style}]{kind}[/]" if style else str(kind)


def _number(value: object) -> str:
    """A value as repro.py prints it: ``nan`` and ``inf`` for non-finite floats."""
    return "nan" if value is None else str(value)


def value_name(case: Case, output: OutputVerdict) -> str:
    """What repro.py calls an output (``v5``), or a gradient (``grad of p2``)."""
    graph = case.graph
    gradient = output.details.gradient_of
    try:
        if gradient is not None:
            return f"grad of {graph.var(gradient)}"
        return graph.var(output.node)
    except (KeyError, IndexError, AttributeError):  # a node no longer in this graph
        return f"node {output.node}"


SURFACE_OPTION = click.option(
    "--surface", type=click.Choice(list(CATALOGUE)),
    help="Run it on this surface of the catalogue instead of the one it records (a model file: "
         "instead of the default compile), e.g. aoti: torch.export, then an AOTInductor package.")


def on_surface(case: Case, name: str | None) -> Case:
    """The case on the catalogue surface ``name`` (its recipe's own where None)."""
    if name is not None:
        case.recipe = case.recipe.on(CATALOGUE[name])
    return case


@main.command()
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda", "case"]), default="case",
              show_default=True, help="Where to replay; 'case' uses the device it was found on.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="For model files: seed before building the model and drawing inputs.")
@click.option("--timeout", type=float, default=300, show_default=True)
@SURFACE_OPTION
@click.option("--json", "as_json", is_flag=True)
def replay(target: Path, device: str, seed: int, timeout: float, surface: str | None,
           as_json: bool) -> None:
    """Re-run a case file (or a model .py file) and print the verdict table.

    Exit 1: it diverges (for a model file: the model itself does); 0: it does not (an
    "expected" divergence, which vanishes with emulate_precision_casts, included); 2: bad input,
    or it could not be judged (eager failed, a skip, a harness error: never "does not
    diverge")."""
    from fuzzer.corpus.replay import replay_case
    from fuzzer.user.capture import load_target

    case = on_surface(load_target(target, seed), surface)
    checking = follow_malloc_check(case.origin, case.verdict.kind if case.verdict else "")
    if device != "case":
        case.device = resolve_device(device)
    if target.suffix == ".py":
        _replay_model_file(case, timeout, as_json)
    result = replay_case(case, timeout=timeout, env=checking)
    verdict, outputs = result.verdict, result.outputs
    if as_json:
        click.echo(strict_json({"case": str(target), "judged": judged(verdict),
                                "surface": asdict(case.recipe.surface),
                                "verdict": verdict.to_dict(), **not_judged_reason(verdict)}))
    elif judged(verdict):
        print_verdict(case, verdict, outputs)
    if not judged(verdict):
        raise could_not_judge(str(target), verdict)
    sys.exit(1 if verdict.is_finding else 0)


def judged(verdict: Verdict) -> bool:
    """Did eager, compiled and float64 all run, so that the verdict says something? A skip
    (eager failed, a graph break, runs that changed shape, out of memory, a harness error) is
    no verdict: never 'does not diverge'."""
    from fuzzer.judge.kinds import Kind

    return verdict.kind != Kind.SKIP


def not_judged_reason(verdict: Verdict) -> dict:
    """``{"reason": ...}`` for ``--json`` when the verdict was not made, else nothing."""
    return {} if judged(verdict) else {"reason": " ".join(verdict.message.split())}


def could_not_judge(what: str, verdict: Verdict) -> UserError:
    """Exit 2 in one line: ``what`` could not be judged, and why."""
    reason = " ".join(verdict.message.split()) or str(verdict.kind)
    return UserError(f"{what}: could not judge it, so it is not clean: {reason}")


def _replay_model_file(case: Case, timeout: float, as_json: bool) -> None:
    """A model file gets one verdict: its own Model's (judged with what its capture knows of the
    heads); the capture's, the graph minimize and triage work on, is shown only when it differs.
    Exit 1 when the file's own Model diverges; 2 when it could not be judged. ``same`` (in
    ``--json``) compares two verdicts only when both were made."""
    from fuzzer.execute.workers import LocalRunner
    from fuzzer.user.verify import verify_capture

    runner = LocalRunner(case.device, timeout=timeout, warmup=case.recipe.warms_up)
    try:
        check = verify_capture(case, runner)
    finally:
        runner.close()
    own, captured = check.original, check.captured
    path = case.origin["model_file"]
    if as_json:
        both = judged(own) and judged(captured)
        click.echo(strict_json({"case": path, "judged": judged(own),
                                "surface": asdict(case.recipe.surface), "verdict": own.to_dict(),
                                "captured_verdict": captured.to_dict(),
                                **({"same": check.agree} if both else {}),
                                **not_judged_reason(own)}))
    if not judged(own):
        raise could_not_judge(path, own)
    if not as_json:
        print_verdict(check.case, own, check.original_outputs,
                      title=f"{case.origin['model_file']}: ")
        if not check.agree:
            click.echo(f"its capture differs (the graph minimize and triage work on): "
                       f"{captured.summary()}")
    sys.exit(1 if own.is_finding else 0)


# ------------------------------------------------------------------ corpus


@main.group()
def corpus() -> None:
    """Inspect the corpus of case files."""


@corpus.command("list")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path),
                default=Path("corpus"))
@click.option("--json", "as_json", is_flag=True)
def corpus_list(directory: Path, as_json: bool) -> None:
    """What has been found: kind, output, ops, dtype, device, age."""
    from fuzzer.corpus.replay import corpus_rows

    if not directory.is_dir():
        raise UserError(f"{directory}: no such corpus directory")
    rows = corpus_rows(directory)
    if as_json:
        click.echo(strict_json(rows))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{directory}: {len(rows)} case files")
    for col in ("file", "kind", "evidence", "output", "ops", "dtype", "device", "campaign",
                "age"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["file"], r["kind"], r["evidence"], _blank(r["output"]), _blank(r["ops"]),
                      r["dtype"], r["device"], r["campaign"], r["age"])
    Console(width=140).print(table)


def _blank(value: object) -> str:
    return "" if value is None else str(value)


# ------------------------------------------------------------------ minimize


@main.command()
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path),
              help="Output directory (default reports/min/<case id>/).")
@click.option("--k", "k", type=click.IntRange(1, 20), default=3, show_default=True,
              help="The case must reproduce k/k before and after.")
@click.option("--max-calls", type=click.IntRange(min=1), default=400, show_default=True,
              help="Oracle calls at most (the nightly's default too).")
@click.option("--time", "duration", help="Wall-time budget (e.g. 10m).")
@click.option("--corpus", type=click.Path(file_okay=False, path_type=Path),
              default=Path("corpus"), show_default=True, help="Where slips are saved.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="For model files: seed before building the model and drawing inputs.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda", "case"]), default="case",
              show_default=True, help="Where to minimize; 'case' uses the device it was found "
                                      "on (for a model file: auto).")
@click.option("--timeout", type=float, default=300, show_default=True)
@SURFACE_OPTION
@click.option("--json", "as_json", is_flag=True)
def minimize(target: Path, out: Path | None, k: int, max_calls: int, duration: str | None,
             corpus: Path, seed: int, device: str, timeout: float, surface: str | None,
             as_json: bool) -> None:
    """Shrink a divergence to a minimal case.pt + standalone repro.py.

    Exit 1: the minimized case reproduces k/k (fresh compiles); 3: it, or the case given, does not
    reproduce k/k; 2: bad input, or the case (the model file, or its capture) could not be
    judged (eager failed, a skip, a harness error)."""
    from fuzzer.execute.workers import LocalRunner
    from fuzzer.reduce.minimize import NotReproducible
    from fuzzer.reduce.minimize import minimize as shrink
    from fuzzer.user.capture import load_target

    seconds = parse_duration(duration)
    writable(out or Path("reports") / "min", "-o")
    writable(corpus, "--corpus")
    case = on_surface(load_target(target, seed), surface)
    checking = follow_malloc_check(case.origin, case.verdict.kind if case.verdict else "")
    if device != "case":
        case.device = resolve_device(device)
    runner = Watched(LocalRunner(case.device, timeout=timeout, warmup=case.recipe.warms_up,
                            env=checking or None))
    log_lines: list[str] = []

    def progress(text: str) -> None:
        line = stamped(text)
        log_lines.append(line)
        if not as_json:
            click.echo(line, err=True)

    unjudged, what = None, str(target)
    try:
        if target.suffix == ".py":
            case = _captured_divergence(case, runner, progress)
        out = out or Path("reports") / "min" / case.digest()[:12]
        result = shrink(case, runner, k=k, max_calls=max_calls, seconds=seconds,
                        corpus=corpus, progress=progress)
    except NotReproducible as err:
        if runner.seen and not any(judged(v) for v in runner.seen):  # the opening k/k check
            unjudged = runner.seen[0]
        else:
            click.echo(f"numfuzz: nothing minimized: {err}", err=True)
            sys.exit(3)
    except NotJudged as err:
        unjudged, what = err.verdict, f"{target}{err.what}"
    finally:
        runner.close()
    if unjudged is not None:
        if as_json:
            click.echo(strict_json({"case": str(target), "judged": False,
                                    **not_judged_reason(unjudged)}))
        raise could_not_judge(what, unjudged)
    assert out is not None  # set in the try, which ran to the end: no exit, nothing unjudged
    rows = result.table()
    log_lines += [f"{what}: {before} -> {after}" if before else f"{what}: {after}"
                  for what, before, after in rows]
    log_lines += result.pass_lines()
    repro = _save_minimized(result, out, log_lines)
    if as_json:
        click.echo(strict_json({"case": str(out / "case.pt"),
                                "repro": str(repro) if repro else None,
                                "verdict": result.verdict.to_dict(),
                                **{what: after for what, _, after in rows}}))
    else:
        _minimize_table(result, out, repro)
    reproduces = result.reliability == (k, k)
    if not reproduces:
        click.echo(f"numfuzz: the minimized case reproduced only {result.reliability[0]}/{k} "
                   f"times; {out / 'case.pt'} is not a reliable repro", err=True)
    sys.exit(1 if reproduces else 3)


def _save_minimized(result: MinimizeResult, out: Path, log_lines: list[str]) -> Path | None:
    """case.pt, repro.py and minimize.log in ``out``; a write that fails is one line. A repro.py
    numfuzz cannot render is said in one line and the log; the case stays saved (None)."""
    from fuzzer.corpus.files import atomic_write, write_failure
    from fuzzer.errors import CaseError
    from fuzzer.reduce.repro import write_repro

    repro = None
    try:
        result.case.save(out / "case.pt")
        try:
            repro = write_repro(result.case, out)
        except CaseError as err:
            log_lines.append(str(err))
            click.echo(f"numfuzz: {err}; {out / 'case.pt'} is saved", err=True)
        atomic_write(out / "minimize.log", "\n".join(log_lines) + "\n")
    except OSError as err:
        raise UserError(f"minimized, but the result is not saved: {write_failure(err)}") \
            from None
    return repro


def _captured_divergence(case: Case, runner: TaskRunner,
                         progress: Callable[[str], None]) -> Case:
    """A model file's case, after checking it diverges the way the file itself does."""
    from fuzzer.reduce.minimize import NotReproducible
    from fuzzer.user.verify import verify_capture

    check = verify_capture(case, runner)
    if not judged(check.original):
        raise NotJudged(check.original)
    if check.original.is_finding and not judged(check.captured):
        raise NotJudged(check.captured, ": its captured graph")  # what minimize works on
    progress(check.message)
    if not check.reproduces:
        raise NotReproducible(check.message)
    return check.case


class NotJudged(Exception):
    """A model file's own run, or its capture's, was not judged (minimize exits 2)."""

    def __init__(self, verdict: Verdict, what: str = "") -> None:
        super().__init__(verdict.message)
        self.verdict, self.what = verdict, what


class Watched:
    """A runner that keeps the verdicts it handed back: when minimize's opening check finds no
    divergence, were they judged at all (exit 3), or skips (could not judge: exit 2)?"""

    def __init__(self, runner: LocalRunner) -> None:
        self.runner = runner
        self.seen: list[Verdict] = []

    def run(self, task: Task, timeout: float | None = None) -> RunResult:
        result = self.runner.run(task, timeout)
        self.seen.append(result.verdict)
        return result

    def close(self) -> None:
        self.runner.close()


def _minimize_table(result: MinimizeResult, out: Path, repro: Path | None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"minimized: {result.verdict.summary()}")
    for col in ("", "before", "after"):
        table.add_column(col)
    for row in result.table():
        table.add_row(*row)
    console = Console(width=120)
    console.print(table)
    if repro is None:
        console.print(f"wrote {out / 'case.pt'}, {out / 'minimize.log'} (no repro.py)")
        return
    console.print(f"wrote {out / 'case.pt'}, {repro}, {out / 'minimize.log'}")
    console.print(f"run it: python {repro}")


# ------------------------------------------------------------------ repro


@main.command("repro")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True,
              help="Directory for repro.py (and inputs.pt when the inputs are large).")
def repro_command(target: Path, out: Path) -> None:
    """Write the standalone repro.py of a saved case exactly as saved, without minimizing.

    It needs only torch: `python OUT/repro.py` exits 1 when the divergence reproduces, 0 when it
    does not, 2 when it cannot run."""
    from fuzzer.corpus.case import Case
    from fuzzer.reduce.repro import write_repro

    writable(out, "-o")
    case = Case.load(target)
    path = write_repro(case, out)
    click.echo(f"{path}  ({case.verdict.summary() if case.verdict else 'no verdict'})")

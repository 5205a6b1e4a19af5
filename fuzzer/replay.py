"""Replay one case in an isolated worker and show what every output did; list a corpus."""

from __future__ import annotations

import time
from pathlib import Path

from fuzzer.case import Case, CaseError
from fuzzer.oracle import Verdict
from fuzzer.runner import Task
from fuzzer.workers import Runner


def load_target(path: Path, seed: int = 0) -> Case:
    """A case file, or a KernelBench-style model file captured into a case."""
    if path.suffix == ".py":
        from fuzzer.capture import capture_file

        return capture_file(path, seed).case()
    if not path.exists():
        raise CaseError(f"{path}: no such file")
    return Case.load(path)


def task_for(case: Case, keep_outputs: bool = False) -> Task:
    return Task(graph=case.graph.to_dict(), draws=[case.inputs], device=case.device,
                backend=case.backend, config=dict(case.config), keep_outputs=keep_outputs)


def replay_case(case: Case, timeout: float = 300, runner: Runner | None = None,
                ) -> tuple[Verdict, dict]:
    """Run the case once in a worker; returns the verdict and the observed outputs."""
    own = runner is None
    runner = runner or Runner(case.device, timeout=timeout,
                              warmup=case.backend == "inductor")
    try:
        result = runner.run(task_for(case, keep_outputs=True))
    finally:
        if own:
            runner.close()
    return Verdict.from_dict(result["verdict"]), result.get("outputs", {})


def print_verdict(case: Case, verdict: Verdict, outputs: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=120)
    console.print(f"[bold]{verdict.summary()}[/]  ({len(case.graph)} ops, {case.dtype}, "
                  f"{case.device}, backend {case.backend})")
    table = Table(title="outputs")
    for col in ("#", "node", "dtype", "verdict", "detail"):
        table.add_column(col)
    for o in verdict.outputs:
        d = o.details
        detail = d.get("reason", "")
        if "count" in d:
            detail = f"{d['count']}/{d['total']} differ " + detail
        table.add_row(str(o.output), str(o.node), o.dtype, o.kind, detail)
    console.print(table)
    for o in verdict.outputs:
        elements = o.details.get("elements")
        if not elements:
            continue
        el = Table(title=f"output {o.output}: differing elements")
        for col in ("index", "eager", "compiled", "float64", "ulps from boundary"):
            el.add_column(col)
        for e in elements:
            el.add_row(str(tuple(e["index"])), str(e["eager"]), str(e["compiled"]),
                       str(e["fp64"]), str(e.get("ulps", "")))
        console.print(el)


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def corpus_rows(directory: Path) -> list[dict]:
    """One row per case file; unreadable files are listed as such, never fatal."""
    rows = []
    now = time.time()
    for path in sorted(directory.glob("*.pt")):
        age = _age(now - path.stat().st_mtime)
        try:
            case = Case.load(path)
        except CaseError as err:
            rows.append({"file": path.name, "kind": "unreadable", "output": None, "ops": None,
                         "dtype": "", "device": "", "age": age, "error": str(err)})
            continue
        v = case.verdict
        rows.append({"file": path.name, "kind": v.kind if v else "none",
                     "output": v.output if v else None, "ops": len(case.graph),
                     "dtype": case.dtype, "device": case.device, "age": age})
    return rows



"""Replay one case in an isolated worker (its outputs come back too); list a corpus."""

from __future__ import annotations

import time
from pathlib import Path

from fuzzer.corpus.case import Case, CaseError
from fuzzer.execute.pool import TaskRunner
from fuzzer.execute.task import RunResult
from fuzzer.execute.workers import LocalRunner


def replay_case(case: Case, timeout: float = 300, runner: TaskRunner | None = None,
                env: dict[str, str] | None = None) -> RunResult:
    """Run the case once in a worker (``runner``, or one of its own, started with ``env``:
    glibc's malloc checking, ``execute.memcheck.follow``); its verdict and outputs."""
    if runner is not None:  # a local LocalRunner or a fleet actor's: the caller closes it
        return runner.run(case.task(keep_outputs=True))
    own = LocalRunner(case.device, timeout=timeout, warmup=case.recipe.warms_up, env=env or None)
    try:
        return own.run(case.task(keep_outputs=True))
    finally:
        own.close()


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def campaign_of(case: Case) -> str:
    """Which campaign found a case (``seed 13 #9``): one folder holds many, told apart so."""
    seed, index = case.origin.get("campaign_seed"), case.origin.get("index")
    return f"seed {seed} #{index}" if seed is not None and index is not None else ""


def corpus_rows(directory: Path) -> list[dict]:
    """One row per case file; unreadable files are listed as such, never fatal."""
    rows: list[dict[str, str | int | None]] = []
    now = time.time()
    for path in sorted(directory.glob("*.pt")):
        age = _age(now - path.stat().st_mtime)
        try:
            case = Case.load(path)
        except CaseError as err:
            rows.append({"file": path.name, "kind": "unreadable", "evidence": "", "output": None,
                         "ops": None, "dtype": "", "device": "", "campaign": "", "age": age,
                         "error": str(err)})
            continue
        v = case.verdict
        rows.append({"file": path.name, "kind": str(v.kind) if v else "none",
                     "evidence": v.evidence if v else "", "output": v.output if v else None,
                     "ops": len(case.graph), "dtype": case.dtype, "device": case.device,
                     "campaign": campaign_of(case), "age": age})
    return rows

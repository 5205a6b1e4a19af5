"""A tlparse report of a draft's plain reproducer, where the pt2 issue template asks for one.

The reproducer runs once with ``TORCH_TRACE`` set to a folder beside the draft (torch's
structured trace: every compile's graphs, guards and generated code), and the ``tlparse``
package (``pip install numfuzz[trace]``, a prebuilt binary on PyPI) turns that folder into a
static HTML report. Without the package the trace is still written, and the draft says how to
render it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from fuzzer.execute import zygote

TRACE_ENV = zygote.TRACE  # one name for it: the zygote applies it in a forked child
TIMEOUT = 120.0  # seconds for tlparse on one small trace


def tool() -> str | None:
    """The tlparse command: beside this interpreter (its venv) or on PATH."""
    here = Path(sys.executable).parent / "tlparse"
    return str(here) if here.exists() else shutil.which("tlparse")


def trace_environment(folder: Path) -> dict[str, str]:
    """What a run adds to its environment to write torch's structured trace to ``folder``."""
    return {TRACE_ENV: str(folder.resolve())}  # the run's own folder is another


def render(trace: Path, out: Path, timeout: float = TIMEOUT) -> Path | None:
    """``out/index.html`` from the trace folder ``trace``; None where there is no tlparse, no
    trace, or it failed (the draft then names the raw trace)."""
    command, log = tool(), newest_log(trace)
    if command is None or log is None:
        return None
    try:
        done = subprocess.run([command, str(log), "-o", str(out), "--overwrite",
                               "--no-browser"],
                              capture_output=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    index = out / "index.html"
    return index if done.returncode == 0 and index.exists() else None


def newest_log(trace: Path) -> Path | None:
    """The trace's newest log: the plain run's own process (None: no trace)."""
    logs = sorted(trace.glob("*.log"), key=lambda p: p.stat().st_mtime) if trace.is_dir() else []
    return logs[-1] if logs else None


def paragraph(trace: Path | None, report: Path | None, draft: Path) -> str:
    """What a draft says of the trace, with paths relative to it."""
    if trace is None:
        return ""
    raw = os.path.relpath(trace, draft.parent)
    if report is not None:
        return (f"A tlparse report of the plain reproducer's compile is "
                f"`{os.path.relpath(report, draft.parent)}` (from torch's structured trace in "
                f"`{raw}/`, `TORCH_TRACE`).")
    log = newest_log(trace)
    newest = f"{raw}/{log.name}" if log is not None else f"{raw}/<its .log file>"
    return (f"torch's structured trace of the plain reproducer is in `{raw}/` (`TORCH_TRACE`); "
            f"`pip install tlparse && tlparse {newest}` renders it.")

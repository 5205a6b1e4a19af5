"""Another torch: a script run under another Python interpreter, with a timeout, and what it said.

The interpreter of another environment (a nightly build beside a stable release, an older
release) is named by its path (``--confirm-with PYTHON``); ``interpreter`` asks it once for its
torch version and refuses, in one line, one that is missing or has no torch. A script follows
the repro contract (``reduce.repro``): exit 1 = the bug reproduces, 0 = it does not, 2 = it
cannot run here. An uncaught Python exception exits 1 too, so a traceback on stderr is read as
"cannot run", never as reproducing; so is a script cut by its timeout.

One home for "run this script under that interpreter": ``numfuzz known --check`` runs each known
cause's repro (``triage.known``), ``triage`` and ``nightly --confirm-with`` run a cause's
minimized ``repro.py`` before it is drafted (``confirm_case``, ``decide``), and a draft's plain
reproducer runs here too (``run_script``, behind ``nightly.drafts.run_snippet``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from fuzzer import clock
from fuzzer.corpus.case import Case
from fuzzer.errors import InputError
from fuzzer.execute import zygote
from fuzzer.execute.workers import _python_path as python_path
from fuzzer.execute.workers import chatter

REPRODUCES, ABSENT, CANNOT_RUN = "reproduces", "does not reproduce", "cannot run"
OUTCOMES = {1: REPRODUCES, 0: ABSENT, 2: CANNOT_RUN}  # the repro contract's exit statuses
ASK_TIMEOUT = 120.0  # seconds for an interpreter to import torch and say its version
CONFIRM_TIMEOUT = 600.0  # one repro: a fresh interpreter, one compile (a hang's repro waits 300)
TRACEBACK = "Traceback (most recent call last):"


@dataclass(frozen=True)
class Interpreter:
    """Another environment's Python, and the torch version it reported."""

    python: str
    torch: str

    @property
    def release(self) -> str:
        return release(self.torch)


@dataclass
class Run:
    """One script run under one interpreter: its outcome (``OUTCOMES``), exit status (None:
    cut by the timeout), what it printed (stdout, then stderr's last lines) and how long."""

    python: str
    torch: str
    outcome: str
    code: int | None
    output: str
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


def release(version: str) -> str:
    """``2.15.0.dev20261001+cpu`` -> ``2.15``: the release a fix lands in."""
    parts = torch.torch_version.Version(version.split("+")[0]).release
    return ".".join(str(p) for p in (tuple(parts) + (0,))[:2])


def older(a: str, b: str) -> bool:
    """Is torch version ``a`` older than ``b`` (local build tags ignored)?"""
    return torch.torch_version.TorchVersion(a.split("+")[0]) < b.split("+")[0]


def this_interpreter() -> Interpreter:
    return Interpreter(sys.executable, str(torch.__version__))


def interpreter(python: str, timeout: float = ASK_TIMEOUT) -> Interpreter:
    """``python`` (a path, or a name on PATH) and the torch version it imports; InputError (one
    line) when it is missing, is not a Python, has no torch or does not answer."""
    found = shutil.which(python) or (python if os.path.isfile(python) else None)
    if found is None or not os.access(found, os.X_OK):
        raise InputError(f"--confirm-with {python}: no such interpreter (give the path of "
                         "another environment's python, e.g. /opt/nightly/bin/python)")
    ask = [found, "-c", "import torch; print('torch', torch.__version__)"]
    try:
        proc = subprocess.run(ask, capture_output=True, text=True, timeout=timeout,
                              env=_foreign_env(), cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        raise InputError(f"--confirm-with {python}: did not say its torch version within "
                         f"{timeout:.0f}s") from None
    except OSError as err:
        raise InputError(f"--confirm-with {python}: cannot run it: {err.strerror}") from None
    said = [line.split()[1] for line in proc.stdout.splitlines()
            if line.startswith("torch ") and len(line.split()) == 2]
    if proc.returncode != 0 or not said:
        why = (proc.stderr.strip().splitlines() or ["no answer"])[-1]
        raise InputError(f"--confirm-with {python}: cannot import torch there ({why[:200]})")
    return Interpreter(python, said[0])


def interpreters(pythons: Sequence[str]) -> tuple[Interpreter, ...]:
    """Each named interpreter, asked once, in the order given (InputError on the first bad)."""
    return tuple(interpreter(p) for p in pythons)


def _foreign_env() -> dict[str, str]:
    """Another environment's own torch must import there, never this one's: its PYTHONPATH is
    only the current folder (where a trusted custom backend's module lives), not this
    interpreter's site-packages."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = os.getcwd()
    return env


def run_script(script: Path, python: str | None = None, timeout: float = CONFIRM_TIMEOUT,
               extra_env: dict[str, str] | None = None) -> tuple[int | None, str]:
    """Run ``script`` as a person would, in a fresh interpreter (this one by default, forked
    from ``zygote`` where nothing it reads at import differs) in the script's folder, with
    ``extra_env`` besides (glibc's malloc checking): its exit status (None when the timeout
    cut it; its session is killed) and its output (stdout, then stderr's last lines that are
    not warnings)."""
    mine = python is None or python == sys.executable
    env = {**os.environ, "PYTHONPATH": python_path()} if mine else _foreign_env()
    env.update(extra_env or {})
    timeout = max(1.0, timeout)
    try:  # a budget's subprocess: its cost is told to the budget clock (``fuzzer.clock``)
        proc = clock.run_subprocess([script.name], timeout, run=zygote.run, cwd=script.parent,
                                    env=env, python=None if mine else python)
    except subprocess.TimeoutExpired:  # cut, or past its time on a simulated clock
        return None, f"(no answer within {timeout:.0f}s)"
    out, err = proc.stdout, proc.stderr
    shown = [ln for ln in err.strip().splitlines() if not chatter(ln)][-3:]
    if proc.returncode == 1 and TRACEBACK in err:  # Python's own exit status for a raise
        raised = exception_line(err)
        return None, "\n".join([out.strip(), "raised:", *([raised] if raised else []),
                                *(ln for ln in shown if ln != raised)]).strip()
    return proc.returncode, "\n".join([out.strip(), *shown]).strip()


# The line a traceback ends its frames with: the exception's type and the first line of its
# message (``torch._inductor.exc.InductorError: CppCompileError: C++ compile error``).
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Failed|Interrupt|Exit)\b.*")


def exception_line(err: str) -> str:
    """The last traceback's exception line ('' if none): what raised, which a long message
    (a C++ compiler's warnings after ``CppCompileError``) pushes out of the last lines."""
    tail = err.rsplit(TRACEBACK, 1)[-1].splitlines()
    return next((ln.strip()[:300] for ln in tail if EXCEPTION_LINE.match(ln)), "")


def run_under(script: Path, python: Interpreter, timeout: float = CONFIRM_TIMEOUT) -> Run:
    """``script`` under ``python``: its outcome by the repro contract."""
    start = time.monotonic()
    code, output = run_script(script, python.python, timeout)
    outcome = OUTCOMES.get(code, CANNOT_RUN) if code is not None else CANNOT_RUN
    return Run(python.python, python.torch, outcome, code, output,
               round(time.monotonic() - start, 1))


def confirm_case(case: Case, pythons: Sequence[Interpreter],
                 timeout: float = CONFIRM_TIMEOUT) -> list[Run]:
    """A case's standalone ``repro.py`` (with its ``inputs.pt``), written to a folder of its
    own, run under each interpreter."""
    from fuzzer.reduce.repro import write_repro

    with tempfile.TemporaryDirectory(prefix="numfuzz-confirm-") as folder:
        script = write_repro(case, Path(folder))
        return [run_under(script, python, timeout) for python in pythons]


@dataclass(frozen=True)
class Decision:
    """Whether a cause is drafted after its repro ran under the named torches: ``drafted`` when
    it reproduces on every one; ``fixed_in``, the oldest newer torch (than this one) it no
    longer reproduces on, when upstream fixed it; ``why`` in words."""

    drafted: bool
    fixed_in: str | None
    why: str


def decide(runs: Sequence[Run], installed: str | None = None) -> Decision:
    """Drafted only when present on every named torch. Absent on a torch newer than
    ``installed`` (default: this one): fixed upstream in the oldest such version. Absent on an
    older (or the same) torch, or not run there: held back, and said why."""
    installed = installed or str(torch.__version__)
    fixed = sorted((r for r in runs if r.outcome == ABSENT and older(installed, r.torch)),
                   key=lambda r: torch.torch_version.TorchVersion(r.torch.split("+")[0]))
    if fixed:
        return Decision(False, fixed[0].torch, f"fixed upstream: does not reproduce on torch "
                                               f"{fixed[0].torch}")
    missing = [r for r in runs if r.outcome != REPRODUCES]
    if not missing:
        return Decision(True, None, "reproduces on every named torch")
    return Decision(False, None, "not on every named torch: " + "; ".join(
        f"{r.outcome} on torch {r.torch}" for r in missing))

"""What a compiled run that raised means: a crash, a memory-unsafe kernel, or a skip where the
failure is a documented limitation or the campaign's own choice (out of memory, torch.export
declining the program, a graph break under ``fullgraph=True``, no GEMM implementation among the
backends the campaign narrowed max-autotune to), and the one line a crash signature keys on.
"""

from __future__ import annotations

import traceback

import torch

from fuzzer.execute import calling, faults
from fuzzer.execute.recipe import Recipe
from fuzzer.judge import rules
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import Verdict


def compiled_failure(err: BaseException, recipe: Recipe, sdpa: list[str]) -> Verdict:
    """The verdict of a compiled run that raised: out of memory, torch.export declining the
    program (a documented limitation: ``calling.REFUSALS``), a graph break (fullgraph=True asked
    for one graph; Dynamo declines a feature) and no GEMM implementation among the campaign's
    ``max_autotune_gemm_backends`` are skips; a memory-unsafe error is its own kind
    (``faults.as_memory_unsafe``); anything else is a crash, told apart by its type and frames."""
    line = error_line(err)
    if faults.out_of_memory(line):
        return Verdict(Kind.SKIP, message=faults.oom_message(line), sdpa=sdpa)
    refused = export_refused(err)
    if refused:
        return Verdict(Kind.SKIP, message=f"{EXPORT_REFUSED}: {refused}", sdpa=sdpa)
    if graph_break(err):
        return Verdict(Kind.SKIP, message=f"graph break: {line}", sdpa=sdpa)
    if no_gemm_choice(err, recipe.config):
        return Verdict(Kind.SKIP, message="no GEMM implementation among the campaign's "
                       f"max_autotune_gemm_backends takes this one: {line}", sdpa=sdpa)
    return Verdict(faults.as_memory_unsafe(Kind.CRASH, line), message=line,
                   frames=rules.torch_frames(err), sdpa=sdpa)


EXPORT_REFUSED = "export refused"  # how a skip of a program torch.export declines begins


def export_refused(err: BaseException | None) -> str:
    """Why torch.export declined the program ('' where it did not): ``calling.ExportRefused``
    somewhere along the causes."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, calling.ExportRefused):
            return str(err)
        err = err.__cause__ or err.__context__
    return ""


def graph_break(err: BaseException | None) -> bool:
    """Did Dynamo decline to capture the program in one graph (``Unsupported`` under
    ``fullgraph=True``: a ``out=`` it does not trace, a data-dependent branch)? That is a
    feature it lacks, documented as such, not a wrong result or a compiler crash."""
    unsupported = getattr(getattr(torch, "_dynamo", None), "exc", None)
    unsupported = getattr(unsupported, "Unsupported", None)
    while err is not None and unsupported is not None:
        if isinstance(err, unsupported):
            return True
        err = err.__cause__
    return False


def no_gemm_choice(err: BaseException | None, options: dict) -> bool:
    """Did max-autotune find no implementation for a GEMM among the ``max_autotune_gemm_backends``
    the campaign narrowed it to (``"CPP"`` alone: the C++ template, which takes only some
    shapes and dtypes)? Inductor then refuses with ``NoValidChoicesError`` ("No choices exist")
    by design, asking for ``ATEN`` among them: the campaign's choice, not a compiler crash.
    Choices that exist and fail to compile or to run raise the same class with another reason:
    those stay crashes. Matched by the class name along the causes (torch versions move it)."""
    if "max_autotune_gemm_backends" not in options:
        return False
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if type(err).__name__ == "NoValidChoicesError":
            return "No choices exist" in str(err)
        err = err.__cause__ or err.__context__
    return False


def error_line(err: BaseException) -> str:
    """The exception's type and first meaningful line: what a crash signature keys on."""
    lines = [ln for ln in str(err).strip().splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:  # "backend='inductor' raised:" names no error
        first = f"{first} {lines[1].strip()}"
    tb = traceback.extract_tb(err.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    return f"{type(err).__name__}: {first[:300]}{where}"

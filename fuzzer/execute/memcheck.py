"""glibc's malloc checking for every process numfuzz starts: ``numfuzz --malloc-check``.

Why: a kernel that writes past the end of its buffer usually goes unnoticed. The bytes it
clobbers are an allocation's slack or a neighbour's header, the values it returns are right, and
the process may live on or die much later at an unrelated ``free``. Under glibc's malloc checking
(``libc_malloc_debug.so.0`` preloaded, tunable ``glibc.malloc.check=3``) every allocation ends in
a check byte, and ``free`` aborts the process the moment that byte was overwritten ("free():
invalid pointer"). The worker then dies with SIGABRT, and the case is a ``memory-unsafe``
finding with glibc's message: a memory-safety bug in compiled code becomes a finding every time
it runs. (Inductor's C++ GEMM template writing a bf16 tile into a uint8 output was found this way.)

``numfuzz --malloc-check`` sets it in this process's environment before any worker, zygote or
script starts, so all of them inherit it; numfuzz's own process is not checked (it runs no
compiled code). A campaign checks its workers by default on the CPU (``Settings.malloc_check``:
each worker started with ``environment()``), and a case that needs it is replayed with it
(``follow``), without changing this process's environment. The library is
the one beside the libc this process runs, never a path from a case file: a case found under
checking records only ``origin["malloc_check"] = True`` (``follow`` turns checking on to replay it).
It costs a check byte and a check per allocation. (A zygote started before checking was turned
on is not forked from: ``GLIBC_TUNABLES`` and ``LD_PRELOAD`` are import-time variables there.)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from fuzzer.errors import InputError
from fuzzer.judge.kinds import Kind

LIBRARY = "libc_malloc_debug.so.0"
TUNABLE = "glibc.malloc.check=3"  # check bytes, and abort on the first corruption found
ORIGIN_KEY = "malloc_check"  # in a case's origin: found under checking


def library() -> Path | None:
    """glibc's malloc-debug library beside the libc this process runs (glibc 2.34 and later),
    or None."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        path = line.split()[-1]
        if Path(path).name.startswith("libc.so"):
            candidate = Path(path).parent / LIBRARY
            return candidate if candidate.is_file() else None
    return None


def environment(base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables that put a process started with ``base`` under checking (each added to
    what ``base`` already sets); InputError when this machine's glibc has no malloc checking."""
    found = library()
    if found is None:
        raise InputError(f"--malloc-check needs glibc's {LIBRARY} (glibc 2.34 or later) beside "
                         "this process's libc; it is not there")
    tunables = [t for t in base.get("GLIBC_TUNABLES", "").split(":") if t]
    preload = [p for p in base.get("LD_PRELOAD", "").split() if p]
    return {"GLIBC_TUNABLES": ":".join([*tunables, TUNABLE] if TUNABLE not in tunables
                                       else tunables),
            "LD_PRELOAD": " ".join([*preload, str(found)] if str(found) not in preload
                                   else preload)}


def active(env: Mapping[str, str] = os.environ) -> bool:
    """Do processes started with ``env`` run under checking?"""
    return (TUNABLE in env.get("GLIBC_TUNABLES", "").split(":")
            and any(Path(p).name == LIBRARY for p in env.get("LD_PRELOAD", "").split()))


def enable() -> None:
    """Every process started from now on runs under checking."""
    os.environ.update(environment())


def found_under(origin: Mapping, kind: str = "") -> bool:
    """Does the case with this origin (and verdict ``kind``) run under checking: found under
    it, or memory-unsafe (a heap corruption that shows only some of the time without it shows
    every time with it)?"""
    return origin.get(ORIGIN_KEY) is True or kind == Kind.MEMORY


def follow(origin: Mapping, say: Callable[[str], None], kind: str = "") -> dict[str, str]:
    """The environment that runs a case found under checking, or a memory-unsafe one, under
    checking too (it may not reproduce without), for the workers that replay it; {} where it
    needs none, runs under it already, or glibc has no checking. Nothing global changes."""
    if not found_under(origin, kind) or active() or library() is None:
        return {}
    say("this case was found under glibc's malloc checking, or is memory-unsafe: running its "
        "workers under it too")
    return environment()


def shell_prefix() -> str:
    """How a person runs a script under checking (the soname: the loader finds it)."""
    return f"GLIBC_TUNABLES={TUNABLE} LD_PRELOAD={LIBRARY}"

"""Verdict kinds and the orders over them: what a verdict can say, and which kinds are findings.

Kept apart from ``oracle`` and free of torch, so what only needs to name a kind (the worker pool,
the command line) does not load torch to do it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """What a verdict says. A ``str`` too: files and JSON hold the value, ``rules`` (embedded in
    repro files, which know no numfuzz) returns plain strings that compare equal."""

    NONFINITE = "nonfinite"
    INT_FLIP = "int-flip"
    HIDDEN_NONFINITE = "hidden-nonfinite"
    META = "meta"
    ALIASING = "aliasing"  # which outputs share storage with inputs, or what compiled wrote
    CRASH = "crash"
    # A write or read outside a buffer (``memory_class``): a worker the allocator
    # aborted (heap corruption), one killed by SIGSEGV or SIGBUS, a CUDA illegal memory access
    MEMORY = "memory-unsafe"
    # A torch's exact promise on a surface broken (``numerics="strict"``: eager's values;
    # ``batch_invariant``: a row the same computed alone as in its batch), bit for bit
    PROMISE = "promise"
    TIMEOUT = "timeout"
    WORKER_KILL = "worker-kill"
    ACCURACY = "accuracy"
    SIGNED_ZERO = "signed-zero"  # a zero of the other sign, where the program defines it
    PARITY = "parity"
    WEAK_FLIP = "weak-flip"
    BENIGN = "benign"
    # A divergence that vanishes with emulate_precision_casts: Inductor keeps fp16/bf16 round
    # trips in float32 by default, on purpose (``execute.runner.expected_by_default``).
    EXPECTED = "expected"
    OK = "ok"
    SKIP = "skip"
    EAGER_NONFINITE = "eager-nonfinite"  # read from older case files, never produced now


@dataclass(frozen=True)
class Facts:
    """What numfuzz knows of one kind of finding, in one place: the family a cause signature
    groups it in (every discrete head is one family: ``flip``), how a draft shows it (``form``:
    ``memory``, ``raised``, ``hang`` are told by how compiled failed; ``meta``, ``accuracy``,
    ``reason`` by what an output says; ``elements`` by its differing elements), whether compiled
    failing to run where eager runs is all it is (value class 3), why it is a bug where the kind
    alone says it, and what compiled's differing element is, in a draft's sentence."""

    family: str
    form: str
    crash: bool = False
    why: str = ""
    differs: str = ""


FACTS: dict[str, Facts] = {  # keyed by str: a kind read back from a file is a plain str
    Kind.MEMORY: Facts("memory", "memory"),
    Kind.NONFINITE: Facts(
        "nonfinite", "elements", why="compiled produces inf/NaN where both eager and the "
        "float64 reference are finite. PyTorch's accuracy rule compares finite values only, so "
        "this is reported as its own class.",
        differs="a non-finite value eager and float64 do not have"),
    Kind.INT_FLIP: Facts("flip", "elements",
                         differs="compiled further from float64's code than eager's"),
    Kind.HIDDEN_NONFINITE: Facts(
        "nonfinite", "elements", why="compiled is finite where eager and the float64 reference "
        "are both inf/NaN: the compiled model hides an overflow or invalid value.",
        differs="a finite value where eager and float64 overflow"),
    Kind.META: Facts("meta", "meta"),
    Kind.ALIASING: Facts(
        "aliasing", "reason", why="which outputs share storage with the inputs, or what the "
        "program leaves in the inputs it writes, differs from eager's: code that relies on "
        "eager's aliasing (a write through an output, a later read of an input) computes "
        "something else once compiled."),
    Kind.PROMISE: Facts(
        "promise", "reason", why="the surface promises eager's values bit for bit (or a row "
        "computed alone equal to the same row in its batch), and compiled breaks that promise."),
    Kind.CRASH: Facts("crash", "raised", crash=True),
    Kind.TIMEOUT: Facts("timeout", "hang", crash=True),
    Kind.WORKER_KILL: Facts("worker-kill", "reason", crash=True),  # its actor died: said so
    Kind.ACCURACY: Facts("accuracy", "accuracy"),
    Kind.SIGNED_ZERO: Facts(
        "signed-zero", "elements", why="compiled gives a zero of the other sign than eager and "
        "float64's exact zero, where the program defines the sign (1 / x then gives the other "
        "infinity).", differs="a zero of the other sign than eager's and float64's"),
    Kind.PARITY: Facts("flip", "elements",
                       differs="compiled further from float64's code than eager's"),
    Kind.WEAK_FLIP: Facts("flip", "elements",
                          differs="compiled further from float64's code than eager's"),
}


def facts(kind: str) -> Facts:
    """What numfuzz knows of ``kind`` (a kind outside the table: its own family, shown by its
    reason)."""
    return FACTS.get(kind) or Facts(str(kind), "reason")


# Most severe first. Everything in SEVERITY is a finding; the rest are not.
SEVERITY = (Kind.MEMORY, Kind.NONFINITE, Kind.INT_FLIP, Kind.HIDDEN_NONFINITE, Kind.META,
            Kind.ALIASING, Kind.PROMISE, Kind.CRASH, Kind.TIMEOUT, Kind.WORKER_KILL,
            Kind.ACCURACY, Kind.SIGNED_ZERO, Kind.PARITY)
# Not findings, but counted: saved only with --keep-benign.
COUNTED = (Kind.WEAK_FLIP, Kind.BENIGN, Kind.EXPECTED)
RANK = SEVERITY + COUNTED  # how outputs and draws are ordered when picking the case's verdict
# Told apart by the exception (or the way the worker died), not by an output
RAISED = (Kind.CRASH, Kind.TIMEOUT, Kind.MEMORY)
# Compiled raised, hung or killed its worker where eager runs: all there is to it (value class 3)
CRASHES = tuple(Kind(k) for k, f in FACTS.items() if f.crash)
FLIPS = (Kind.INT_FLIP, Kind.WEAK_FLIP, Kind.PARITY)  # discrete codes that differ
POLICIES = ("float64", "parity")  # what a discrete mismatch is judged against (--policy)


# What glibc prints when it aborts on a corrupted heap (malloc/malloc.c's malloc_printerr).
HEAP_ABORTS = ("free(): ", "malloc(): ", "realloc(): ", "double free or corruption",
               "corrupted size vs. prev_size", "corrupted double-linked list",
               "munmap_chunk(): ", "malloc_consolidate(): ", "_int_free(): ", "_int_malloc(): ",
               "tcache_thread_shutdown(): ", "malloc_check_", "corrupted top size")
INVALID_ACCESS = ("worker killed by SIGSEGV", "worker killed by SIGBUS", "illegal memory access",
                  "misaligned address")
HEAP = "heap corruption"
ACCESS = "invalid memory access"


def memory_class(text: str) -> str:
    """``HEAP`` or ``ACCESS`` when this crash is memory-unsafe, else '': a worker glibc aborted
    on a corrupted heap (its message is ``worker killed by SIGABRT: <the last line it logged>``),
    one killed by SIGSEGV or SIGBUS, a CUDA illegal memory access or misaligned address. The class
    is what a draft's title says; it does not tell bugs apart: one heap overflow aborts in glibc in
    one run and segfaults in the next."""
    if text.startswith("worker killed by SIGABRT") and any(m in text for m in HEAP_ABORTS):
        return HEAP
    if any(m in text for m in INVALID_ACCESS):
        return ACCESS
    return ""

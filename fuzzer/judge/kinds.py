"""Verdict kinds and the orders over them: what a verdict can say, and which kinds are findings.

Kept apart from ``oracle`` and free of torch, so what only needs to name a kind (the worker pool,
the command line) does not load torch to do it.
"""

from __future__ import annotations

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


# Most severe first. Everything in SEVERITY is a finding; the rest are not.
SEVERITY = (Kind.MEMORY, Kind.NONFINITE, Kind.INT_FLIP, Kind.HIDDEN_NONFINITE, Kind.META,
            Kind.ALIASING, Kind.PROMISE, Kind.CRASH, Kind.TIMEOUT, Kind.WORKER_KILL,
            Kind.ACCURACY, Kind.SIGNED_ZERO, Kind.PARITY)
# Not findings, but counted: saved only with --keep-benign.
COUNTED = (Kind.WEAK_FLIP, Kind.BENIGN, Kind.EXPECTED)
RANK = SEVERITY + COUNTED  # how outputs and draws are ordered when picking the case's verdict
# Told apart by the exception (or the way the worker died), not by an output
RAISED = (Kind.CRASH, Kind.TIMEOUT, Kind.MEMORY)
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

"""What an error from the GPU means for the case and for the worker that saw it.

- **Sticky CUDA errors** (an illegal memory access, a device-side assert, a launch failure, a
  misaligned address, an illegal instruction …) poison the process's CUDA context: every later
  CUDA call fails the same way, and "to continue using CUDA, the process must be terminated and
  relaunched" (CUDA runtime documentation). The case that raised one keeps its verdict (a
  ``crash`` when compiled raised it, a skip when eager did), the worker answers and is then
  replaced (``task.RunResult.context_lost``), and the campaign goes on. Any other CUDA error
  replaces the worker too: a fresh one costs one warm-up compile, a poisoned one every case after.
- **Out of memory** (``torch.OutOfMemoryError: CUDA out of memory …``, or ``CUDA error: out of
  memory``) is the machine, not the case: a counted skip with a hint (``OUT_OF_MEMORY``), never a
  finding, and the worker's cached blocks are freed. Inductor's static launcher raises the same
  type for "out of resource" (a kernel asking for more shared memory than the GPU has): that is a
  compiled kernel that cannot run, judged as a crash like any other.

- **Memory safety** (``judge.kinds.memory_class``): a worker killed by glibc's own abort on a
  corrupted heap ("free(): invalid next size", "double free or corruption"), by SIGSEGV or
  SIGBUS, or a CUDA illegal memory access or misaligned address is a compiled kernel reading or
  writing outside its buffers: its own kind of finding (``memory-unsafe``), not a generic crash
  (``as_memory_unsafe``).

Errors are told apart by their type's name and message as torch raises them (an error line,
``failures.error_line``): ``torch.AcceleratorError`` (torch 2.8 and later) or ``RuntimeError:
CUDA error: …``; for kernels Inductor launches, ``CUDA driver error: …`` (its static launcher) or
``Triton Error [CUDA]: …`` (Triton's). Text, not types, so a CPU test can raise them from a fake.
"""

from __future__ import annotations

from fuzzer.judge.kinds import Kind, memory_class

# cudaError_t messages of the sticky errors (700, 702, 710, 714-719).
STICKY = ("illegal memory access", "the launch timed out", "device-side assert triggered",
          "hardware stack error", "illegal instruction", "misaligned address",
          "operation not supported on global/shared address space", "invalid program counter",
          "unspecified launch failure")
CUDA_PREFIXES = ("AcceleratorError:", "CUDA error:", "CUDA driver error:", "Triton Error [CUDA]")
OUT_OF_MEMORY = "out of memory"  # how an out-of-memory skip's message begins
OOM_HINT = ("the GPU ran out of memory: run fewer workers per GPU (--workers), or leave the GPU "
            "to numfuzz alone")


def out_of_memory(text: str) -> bool:
    """Does this error line say the device ran out of memory (not a kernel out of resources)?"""
    if "out of resource" in text:
        return False
    return "CUDA out of memory" in text or "CUDA error: out of memory" in text or \
        text.startswith("OutOfMemoryError:") or "OutOfMemoryError: " in text


def poisons_context(text: str) -> bool:
    """Must the worker that saw this error line be replaced (see the module docstring)?"""
    if out_of_memory(text):
        return False
    lowered = text.lower()
    return any(word in lowered for word in STICKY) or any(p in text for p in CUDA_PREFIXES)


def as_memory_unsafe(kind: Kind, text: str) -> Kind:
    """The kind of a compiled run that failed with ``text``: ``memory-unsafe`` for a crash that
    is one (``judge.kinds.memory_class``), else ``kind`` as it was."""
    return Kind.MEMORY if kind == Kind.CRASH and memory_class(text) else kind


def oom_message(text: str) -> str:
    """An out-of-memory skip's message: what ran out, and the hint."""
    return f"{OUT_OF_MEMORY}: {text[:200]} ({OOM_HINT})"

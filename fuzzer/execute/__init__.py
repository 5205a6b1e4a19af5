"""Stage 4, execution: run a program eager (twice), compiled and in float64, in isolation.

Owns how a case is compiled and judged as one value (``recipe``: backend, Inductor options, compile
surface, policy, torch.backends flags; which backends may be named; the one "fresh compile"), the
compile surface (``surface``), the Inductor options allowed (``config``), the torch.backends flags
(TF32, reduced-precision reductions) and eager's attention kernels (``flags``), what a GPU error
means for a case and its worker (``faults``), how a program is run on every surface (``calling``:
state as a module, compile, export and AOTInductor, the call and its record of storage; plain
torch, embedded in repro.py), the task and its typed result that cross to a worker (``task``),
what a compiled run that raised means (``failures``), the in-worker run of a task's draws, eager,
compiled and float64, and the surfaces' promises (``runner``), the isolated long-lived worker
processes (``workers``), fresh processes forked
from one that has imported torch (``zygote``), glibc's malloc checking for every process it
starts (``memcheck``), the one runner pool by device and environment (``pool``) and running a
user's model file as itself (``original``).
May import ``fuzzer.ir`` and ``fuzzer.judge``.
"""

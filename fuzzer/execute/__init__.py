"""Stage 4, execution: run a program eager (twice), compiled and in float64, in isolation.

Owns how a case is compiled and judged as one value (``recipe``: backend, Inductor options, compile
surface, policy, torch.backends flags; which backends may be named; the one "fresh compile"), the
compile surface (``surface``), the Inductor options allowed (``config``), the torch.backends flags
(TF32, reduced-precision reductions) and eager's attention kernels (``flags``), what a GPU error
means for a case and its worker (``faults``), the task and its typed result and the in-worker
runner (``runner``), the isolated long-lived worker processes (``workers``), fresh processes forked
from one that has imported torch (``zygote``), glibc's malloc checking for every process it
starts (``memcheck``), the one runner pool by device and environment (``pool``) and running a
user's model file as itself (``original``).
May import ``fuzzer.ir`` and ``fuzzer.judge``.
"""

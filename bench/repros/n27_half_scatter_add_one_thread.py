"""Inductor on the CPU with one torch thread (as numfuzz's workers run, and PR #118278 keeps
generated code for one thread where more fall back to ATen): a bfloat16/float16 scatter_add_
accumulates in the half type, one rounding per add, so 1000 ones summed into one bfloat16
element stop at 256 (float16: 4000 ones stop at 2048). Eager, and Inductor with more threads,
accumulate in float32: 1000 and 4000. Ordinary inputs.
numfuzz's night of 2026-12-07 (bench/results/41), signature 74e0f883d9233641 (a float16
element off by 0.125 where a partial sum rounded at a tie); the family of PR #96472 (its half
atomic add does not use an accumulation type) and PR #198199 (the same stall on ROCm).
Exit 1 while compiled stalls. Pass a thread count to try others (default 1)."""
import sys

import torch

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)


def scatter(x, index, source):
    return x.scatter_add_(0, index, source)


stalled = False
for dtype, n in ((torch.bfloat16, 1000), (torch.float16, 4000)):
    index, ones = torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=dtype)
    eager = scatter(torch.zeros(1, dtype=dtype), index, ones).item()
    compiled = torch.compile(scatter, fullgraph=True)(torch.zeros(1, dtype=dtype), index,
                                                      ones).item()
    torch._dynamo.reset()
    print(f"threads {torch.get_num_threads()}, {dtype}: {n} ones, eager {eager}, "
          f"compiled {compiled}")
    stalled |= compiled != eager
sys.exit(1 if stalled else 0)

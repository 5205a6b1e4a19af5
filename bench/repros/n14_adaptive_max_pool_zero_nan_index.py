"""N14: F.adaptive_max_pool2d(x, 3, return_indices=True) of an unbatched (1, 1, 2) input
[0.0, nan]. Output column 1's window is [0.0, nan]: both give value nan, eager's index is 1 (the
nan) but compiled's is 0, which points at the 0.0 (backward would send the gradient there).
Cause N14 (§26 `b48cd92a3fb89e49`; looks like N2's mechanism). Checked on torch 2.15.0 CPU,
2026-12-07. Exit 1 while a compiled index does not select the value it returns."""
import sys
import torch
import torch.nn.functional as F


def f(x):
    return F.adaptive_max_pool2d(x, 3, return_indices=True)


x = torch.tensor([[[0.0, float("nan")]]])
(v0, i0), (v1, i1) = f(x), torch.compile(f)(x)
sel = x.flatten()[i1]  # what compiled's index selects
wrong = ~((sel == v1) | (sel.isnan() & v1.isnan()))
print("torch", torch.__version__, "| row 0: eager values", v0[0, 0].tolist(), "indices", i0[0, 0].tolist())
print("compiled values", v1[0, 0].tolist(), "indices", i1[0, 0].tolist(), "-> selects", sel[0, 0].tolist())
sys.exit(1 if wrong.any() else 0)

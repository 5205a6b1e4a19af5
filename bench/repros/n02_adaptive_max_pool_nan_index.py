"""N2: F.adaptive_max_pool2d(x, 2, return_indices=True) of a 3x3 input whose centre is NaN (not
first in any of the four overlapping 2x2 windows). Values agree (all NaN), but the compiled
indices point at the largest non-NaN element of each window (the lowering updates the index with
`gt` and the value with NaN-propagating `maximum`); eager's point at the NaN (flat index 4).
Cause N2 (§20 cause 2). Checked on torch 2.15.0 CPU, 2026-12-07.
Exit 1 while a compiled index does not select the value it returns."""
import sys
import torch
import torch.nn.functional as F


def f(x):
    return F.adaptive_max_pool2d(x, 2, return_indices=True)


x = torch.tensor([[[[1.0, 5.0, 2.0], [3.0, float("nan"), 2.0], [0.0, 1.0, 4.0]]]])
(v0, i0), (v1, i1) = f(x), torch.compile(f)(x)
sel = x.flatten(2).gather(2, i1.flatten(2)).view_as(v1)  # what compiled's index selects
wrong = ~((sel == v1) | (sel.isnan() & v1.isnan()))
print("torch", torch.__version__, "| eager values", v0.flatten().tolist(), "indices", i0.flatten().tolist())
print("compiled values", v1.flatten().tolist(), "indices", i1.flatten().tolist(),
      "-> selects", sel.flatten().tolist())
sys.exit(1 if wrong.any() else 0)

"""N13: F.max_pool2d(x, 3, stride=1, padding=1, return_indices=True) of an all -inf 3x3 input.
Inductor pads each window with -inf; the padding ties the real -inf values and wins, and its
offset becomes an index outside the input (negative here). Eager's indices are all in [0, 9).
Cause N13 (§26 `e724bc852f36e362`). Checked on torch 2.15.0 CPU, 2026-12-07.
Exit 1 while a compiled index is outside [0, numel)."""
import sys
import torch
import torch.nn.functional as F


def f(x):
    return F.max_pool2d(x, 3, stride=1, padding=1, return_indices=True)


x = torch.full((1, 1, 3, 3), float("-inf"))
(_, i0), (_, i1) = f(x), torch.compile(f)(x)
print("torch", torch.__version__, "| eager indices", i0.flatten().tolist())
print("compiled indices", i1.flatten().tolist(), "(valid: 0..8)")
sys.exit(1 if ((i1 < 0) | (i1 >= x[0, 0].numel())).any() else 0)

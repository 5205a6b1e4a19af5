"""N12: F.adaptive_max_pool2d(x, (None, 3)) on an unbatched (0, 16, 45) input (C = 0). Eager gives
a (0, 16, 3) result; Inductor decomposes the divisible case into max_pool2d, whose check rejects
the empty input, so compiling raises. Cause N12 (§24, resize probe, seed 1028).
Checked on torch 2.15.0 CPU, 2026-12-07. Exit 1 while compile raises where eager runs."""
import logging
import sys
import torch
import torch.nn.functional as F


def f(x):
    return F.adaptive_max_pool2d(x, (None, 3))


logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)  # no traceback spam
x = torch.randn(0, 16, 45)
print("torch", torch.__version__, "| eager shape", tuple(f(x).shape))
try:
    got = torch.compile(f)(x)
except Exception as err:
    last = [l for l in str(err).splitlines() if "Error" in l or "Expected" in l][-1]
    print("compiled FAILED:", type(err).__name__, "|", last.strip()[:200])
    sys.exit(1)
print("compiled shape", tuple(got.shape))
sys.exit(0)

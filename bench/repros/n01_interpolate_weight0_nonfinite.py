"""N1: bilinear F.interpolate (align_corners=False) with scale_factor=(1.0, 2.0): on the row
dimension, which keeps its size, every source index is exact, so the lower neighbour row gets
weight 0. The `_upsample_linear` decomposition computes `v1 + (v2 - v1) * alpha`; with that
weight-0 neighbour = inf it is (inf - v1) * 0 = NaN. Eager and float64 stay finite there.
Cause N1 (§20 cause 1; §26 `ef8dad5040256dce`: aot_eager too, so the decomposition).
Checked on torch 2.15.0 CPU, 2026-12-07. Exit 1 while compiled is NaN where eager is finite."""
import sys
import torch
import torch.nn.functional as F


def f(x):
    return F.interpolate(x, scale_factor=(1.0, 2.0), mode="bilinear", align_corners=False)


x = torch.tensor([[[[0.0, 1.0], [2.0, float("inf")]]]])  # 1x1x2x2, one inf in row 1
want, ref, got = f(x), f(x.double()), torch.compile(f)(x)
bad = got.isnan() & want.isfinite()
print("torch", torch.__version__, "| row 0 (its row-1 neighbour = inf has weight 0):")
print("eager   ", want[0, 0, 0].tolist(), "\nfloat64 ", ref[0, 0, 0].tolist())
print("compiled", got[0, 0, 0].tolist(), "| NaN only in compiled:", int(bad.sum()))
sys.exit(1 if bad.any() else 0)

"""N6 (cause A): f(x, w) called as f(x, x[1:, 2:]). f writes x.add_(1) and then reads w.
AOTAutograd's 2-d overlap test (tensors_definitely_do_not_overlap) calls x and its window
disjoint, so no synthetic base is made and the compiled read of w misses the write.
Eager (and float64) see it; Inductor and aot_eager do not. Case: tests/data/aliased_window_stale_read.pt.
Checked on torch 2.15.0 CPU, 2026-12-06. Exit 1 while compiled differs from eager, 0 if not."""
import sys
import torch


def f(x, w):
    x.add_(1)          # write through the whole tensor
    return w.sum(0)    # read through the window passed beside it


def run(backend, dtype=torch.float32):
    torch._dynamo.reset()
    fn = f if backend is None else torch.compile(f, backend=backend)
    x = torch.zeros(4, 6, dtype=dtype)
    return fn(x, x[1:, 2:])


print("torch", torch.__version__)
y = torch.zeros(4, 6)
print("compute_overlapping_tensors([x[1:, 2:], x]):", torch._C._dynamo.guards.compute_overlapping_tensors([y[1:, 2:], y]))
want = run(None)
print("eager      ", want.tolist())
print("float64    ", run(None, torch.float64).tolist())
print("aot_eager  ", run("aot_eager").tolist())
got = run("inductor")
print("inductor   ", got.tolist())
sys.exit(0 if torch.equal(got, want) else 1)

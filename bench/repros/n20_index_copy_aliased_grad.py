"""N20: v = x0[92::2] passed beside x0; v.index_copy_(0, p, x3) with x3 requiring grad.
Eager: x0 * 2 depends on x3 (d/dx3 = 2). Compiled: that output comes back with
requires_grad=False, so the gradient through it is lost. Exits 1 while inductor loses it."""
import sys
import torch


def f(x0, p, x3, v):
    v.index_copy_(0, p, x3)      # writes x3 into x0 through the aliased argument v
    return x0 * 2, x3 * 3        # second output keeps x3 in the autograd graph


def run(backend, dtype=torch.float32):
    torch._dynamo.reset()
    fn = f if backend is None else torch.compile(f, backend=backend, fullgraph=True)
    x0 = torch.zeros(100, 3, dtype=dtype)
    x3 = torch.ones(2, 3, dtype=dtype, requires_grad=True)
    out, out2 = fn(x0, torch.tensor([1, 3]), x3, x0[92::2])
    (out.sum() + out2.sum()).backward()
    g = x3.grad[0, 0].item()
    print(f"{str(backend) if backend else 'eager (no compile)':20s} {str(dtype):14s} "
          f"out.requires_grad={out.requires_grad!s:5s} x3.grad={g}  (expected 2 + 3 = 5)")
    return g


print("torch", torch.__version__)
want = run(None)
run(None, torch.float64)
for b in ("eager", "aot_eager"):
    run(b)
got = run("inductor")
sys.exit(1 if got != want else 0)

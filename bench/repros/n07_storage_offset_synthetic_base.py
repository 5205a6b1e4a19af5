"""N7 (cause C): f(x, w) called as f(x, x[1:2]) where x is no view but starts at storage
offset 1 (x = torch.empty(0).set_(storage, 1, ...)); f does x.round_(). The synthetic base
counts the offset twice: Inductor leaves x[0, 0] unrounded (and writes past the storage's
end); aot_eager fails with 'setStorage ... storage offset 2 ... out of bounds'. §23 C.
Checked on torch 2.15.0 CPU, 2026-12-06. Exit 1 while Inductor's x differs from eager's, 0 if not."""
import sys
import torch


def f(x, w):
    x.round_()
    return w + 0


def run(backend, dtype=torch.float32):
    torch._dynamo.reset()
    s = torch.tensor([4.6, -0.9, -7.2, 2.1, -3.3, -4.4, 1.2], dtype=dtype).untyped_storage()
    x = torch.empty(0, dtype=dtype).set_(s, 1, (3, 2), (2, 1))  # offset 1, not a view
    fn = f if backend is None else torch.compile(f, backend=backend)
    try:
        fn(x, x[1:2])
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:100]}"
    return x.flatten().tolist()


print("torch", torch.__version__)
want = run(None)
print("eager      x =", want)
print("float64    x =", run(None, torch.float64))
print("aot_eager  x =", run("aot_eager"))
got = run("inductor")
print("inductor   x =", got)
sys.exit(0 if got == want else 1)

"""N11: bfloat16 x; x.view(torch.int16).add_(1), then a scatter_ through a diagonal view of x.
Inductor stores the bfloat16 -1.625 into the realized int16 buffer of the dtype view by value
(-1), not by its bits, so x reads NaN (0xFFFF) where eager has -1.625 (on 2.15.0 the other 5
elements of the diagonal slice also lose the add_: 0 where eager has bits 1). 2.11/2.13 failed to
compile (make_reindexer NYI on DtypeView); 2.15 turned that into a silent NaN. Cause N11 (§24,
51cec116546eab6e; known family #197408, PR #189584). Checked on torch 2.15.0 CPU, 2026-12-06.
Exit 1 while compiled differs from eager, 0 if not."""
import sys
import torch


def f(x):
    x.view(torch.int16).add_(1)
    x.diagonal(1, 0, 1).select(0, 4).scatter_(1, torch.tensor([[0]]), torch.tensor([[-1.625]], dtype=x.dtype))
    return x + 0


def run(backend):
    torch._dynamo.reset()
    fn = f if backend is None else torch.compile(f, backend=backend)
    return fn(torch.zeros(3, 4, 5, 2, dtype=torch.bfloat16))


print("torch", torch.__version__)
want = run(None)
print("eager      x[0, 1, 4, 0] =", want[0, 1, 4, 0].item())
print("aot_eager  x[0, 1, 4, 0] =", run("aot_eager")[0, 1, 4, 0].item())
got = run("inductor")
print("inductor   x[0, 1, 4, 0] =", got[0, 1, 4, 0].item(), "| elements differing:", (got.view(torch.int16) != want.view(torch.int16)).sum().item())
sys.exit(0 if torch.equal(got.view(torch.int16), want.view(torch.int16)) else 1)

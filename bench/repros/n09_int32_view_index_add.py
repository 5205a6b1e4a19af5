"""N9: CPU x.view(torch.int32).index_add_(1, p, ints) on a float32 tensor. Compiled adds the
integer -6 as the float -6.0 in x's own dtype, so the int32 element reads -1061158912
(0xC0C00000, the bits of -6.0f) where eager has -6. Integers only: no rounding involved.
Cause N9 (§4 'same strategy on the CPU', int-flip-d36e6a9c3748.pt; §24). Known family: writes
through a dtype view. Checked on torch 2.15.0 CPU, 2026-12-06. Exit 1 while it differs, 0 if not."""
import sys
import torch


def f(x, p, src):
    x.view(torch.int32).index_add_(1, p, src)
    return x.view(torch.int32) + 0


def run(backend):
    torch._dynamo.reset()
    fn = f if backend is None else torch.compile(f, backend=backend)
    return fn(torch.zeros(1, 8), torch.tensor([3]), torch.tensor([[-6]], dtype=torch.int32))


print("torch", torch.__version__)
want = run(None)
print("eager      ", want.tolist())
print("aot_eager  ", run("aot_eager").tolist())
got = run("inductor")
print("inductor   ", got.tolist(), f"(0x{got[0, 3].item() & 0xFFFFFFFF:08X})")
sys.exit(0 if torch.equal(got, want) else 1)

"""Training, an argument passed beside a view of itself (`forward(x, x[:, :], src)`): `x`
does not require grad, is written through `x.t()` with a value that does (so in eager it gets a
grad_fn and is no longer a leaf), and the view `v` is first read after that write. Dynamo
fakifies `v` again after its base was written and checks the fake's metadata against the real
tensor: `AssertionError: False != True` (requires_grad) in torch/_subclasses/meta_utils.py,
already with backend="eager". Eager runs it. Ordinary inputs.
numfuzz's night of 2026-12-07 (bench/results/41), signature 44c1497c28cc9623; a sibling of N26
(the same program reading `v` before the write fails in AOTAutograd instead).
Exit 1 while a compile fails; torch 2.13.0 and 2.15.0 both fail."""
import sys

import torch


def forward(x, v, src):
    a = x * 2.0  # v is not read before the writes
    x.t().add_(src)  # x gets a grad_fn (CopySlices) in eager
    x.mul_(v.clone() * 0 + 2)  # v first read after its base is written
    return x * 1.0, a


def call(fn):
    x = torch.ones(1, 4)
    src = torch.ones(4, 1, requires_grad=True)
    out = fn(x, x[:, :], src)  # the second argument is a view of the first
    out[0].sum().backward()
    return [*out, src.grad]


expected = call(forward)
print("eager: ok, src.grad =", expected[-1].flatten().tolist())
status = 0
for backend in sys.argv[1:] or ["eager", "aot_eager", "inductor"]:
    torch._dynamo.reset()
    try:
        got = call(torch.compile(forward, backend=backend, fullgraph=True))
        print(f"{backend}: ok, same as eager: "
              f"{all(torch.equal(a, b) for a, b in zip(expected, got))}")
    except Exception as error:  # the crash is what this script shows
        print(f"{backend}: {type(error).__name__}: {' '.join(str(error).splitlines()[:2])}")
        status = 1
sys.exit(status)

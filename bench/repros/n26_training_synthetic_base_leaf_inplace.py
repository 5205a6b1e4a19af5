"""Training, an argument passed beside a view of itself (`forward(x, x[:, :], src)`): the view
`v` is read, then `x` (not requiring grad) is written through `x.t()` with a value that requires
grad and written in place again. Eager runs it (the first write gives `x` a grad_fn);
backend="eager" too; aot_eager and inductor fail while AOTAutograd traces the joint graph over
the synthetic base it builds for the two arguments: `RuntimeError: a leaf Variable that
requires grad is being used in an in-place operation` (BackendCompilerFailed). Ordinary inputs.
numfuzz's night of 2026-12-07 (bench/results/41), signature 0cc63feb9c0e35a5 (index_add_ and
copysign_ there; add_, mul_ do the same). Exit 1 while a compile fails; torch 2.13.0 and 2.15.0
both fail."""
import sys

import torch


def forward(x, v, src):
    a = v * 2.0  # v (a view of x) read before the writes
    x.t().add_(src)  # x gets a grad_fn (CopySlices) in eager
    x.mul_(2)  # any second in-place write to x
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

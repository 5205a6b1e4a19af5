"""X5 (numfuzz §41, signature f923746e6f7ab5cf; §36 drafted it as a new candidate): eager's
bug, not the compiler's. Gradient of torch.prod over a dim that holds a NaN or +-inf (and no zero): eager vs compiled.

d prod(x) / d x_i = product of the other elements. For a 1-element dim that is the empty
product, 1.0, whatever x_0 is. Eager's prod_backward (FunctionsManual.cpp) takes
grad * (result / input) when the input has no zero: nan/nan and inf/inf give NaN.
AOTAutograd traces prod_backward on fake tensors (isTensorSubclassLike) and so always takes
prod_safe_zeros_backward (exclusive cumprods; size-1 dim: returns grad), which is exact.
Exit 1 while eager and compiled differ."""
import sys
import torch

torch.set_num_threads(1)
nan, inf = float("nan"), float("inf")


def f(x):
    return torch.prod(x, dim=0, keepdim=True)


def exact(vals):  # product of the others, IEEE, per element
    out = []
    for i in range(len(vals)):
        p = 1.0
        for j, v in enumerate(vals):
            if j != i:
                p *= v
        out.append(p)
    return out


def grad(vals, backend=None, dtype=torch.float32):
    x = torch.tensor(vals, dtype=dtype, requires_grad=True)
    fn = torch.compile(f, backend=backend, fullgraph=True) if backend else f
    fn(x).sum().backward()
    torch._dynamo.reset()
    return x.grad.tolist()


differ = False
for vals in ([nan], [-inf], [nan, 2.0], [2.0, nan, 3.0], [-inf, 2.0], [0.0, 2.0, 3.0],
             [0.0, nan, 2.0], [1e30, 1e30, 1e-30]):
    e, a, i = grad(vals), grad(vals, "aot_eager"), grad(vals, "inductor")
    d = grad(vals, dtype=torch.float64)
    same = torch.equal(torch.tensor(e).nan_to_num(7.0), torch.tensor(i).nan_to_num(7.0))
    differ |= not same
    print(f"x={vals}: eager={e} float64(eager formula)={d} aot_eager={a} inductor={i} "
          f"exact={exact(vals)} {'ok' if same else 'DIFFER'}")
sys.exit(1 if differ else 0)

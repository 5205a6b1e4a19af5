"""N23: torch.export + run_decompositions() of a program whose arguments share storage
(v is a view of x0) and that writes one of them (out= into x0, exp_ on v).
torch.export.export itself passes; run_decompositions() (which traces again) raises
`AssertionError: expected compiled_fn to be GraphModule, got <class 'function'>`.
Exits 1 while that assertion reproduces."""
import sys
import torch


class N23(torch.nn.Module):
    def forward(self, x0, p, v):
        torch.mul(p, 2.0, out=x0)  # out= multiply into an argument
        v.exp_()                   # in-place exp_ on a view (v aliases x0)
        return x0 + 1


class OnlyExp(torch.nn.Module):   # smaller: no out= needed
    def forward(self, x0, v):
        v.exp_()
        return x0 * 2


def attempt(name, mod, args, strict=False):
    stage = "export"
    try:
        ep = torch.export.export(mod, args, strict=strict)
        stage = "run_decompositions"
        ep.run_decompositions()
        print(f"{name:32s} strict={strict!s:5s} ok")
        return False
    except Exception as e:
        print(f"{name:32s} strict={strict!s:5s} {stage}: {type(e).__name__}: {str(e).splitlines()[0][:90]}")
        return "expected compiled_fn to be GraphModule" in str(e)


print("torch", torch.__version__)
torch.manual_seed(0)
hit = False
for strict in (False, True):
    x0, p = torch.randn(8), torch.randn(8)
    hit |= attempt("N23, v = x0[1::2] (aliased)", N23(), (x0, p, x0[1::2]), strict)
    x0 = torch.randn(8)
    hit |= attempt("only exp_, v = x0[1::2] (aliased)", OnlyExp(), (x0, x0[1::2]), strict)
    x0, p = torch.randn(8), torch.randn(8)
    attempt("N23, v separate (control)", N23(), (x0, p, torch.randn(4)), strict)

# the raw exported program on the aliased inputs, against eager
x0, p = torch.randn(8), torch.randn(8)
a = (x0.clone(), p.clone()); a = (*a, a[0][1::2])
b = (x0.clone(), p.clone()); b = (*b, b[0][1::2])
want = N23()(*a)
got = torch.export.export(N23(), b).module()(*b)
print("raw export module vs eager on aliased inputs: max |diff| =", (want - got).abs().max().item())
sys.exit(1 if hit else 0)

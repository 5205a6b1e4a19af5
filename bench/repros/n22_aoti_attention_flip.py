"""N22 (NOT minimized): AOTInductor only. A bf16 attention block (layer_norm, q/k/v linears, RoPE,
matmul, causal mask, softmax, matmul, out-proj, rms_norm, GELU MLP) ending in `> 0.5` (§31,
int-flip-3a8a12f5ecc6, case bench/raw/s31_aoti_int_flip.pt; inputs with their layouts in
n22_aoti_attention_inputs.pt). Found by hand while writing this: the package alone is exact; the
23 flips appear only after the RoPE buffers (p16/p17 here p8/p9; storage offset 1, row stride 7)
are handed to it with load_constants(..., check_full_update=False), as numfuzz's harness does
before every call. Even contiguous copies of the same values flip 30. So it may be the harness's
use of load_constants (e.g. constants folded at build time and not refolded) rather than a
codegen bug: a person should check before filing. One AOTInductor build, about a minute.
Checked on torch 2.15.0 CPU, 2026-12-06. Exit 1 while AOTI's bools differ from eager's, 0 if not."""
import os, sys, tempfile
import torch
import torch.nn.functional as F

def model(x0, p1, p2, p4, p5, p8, p9, p12, p13, p16, p17, p27, p28, p31, p33, p34, p37, p38):
    v3 = F.layer_norm(x0, (8,), p1, p2, eps=1e-05)
    v6 = F.linear(v3, p4, p5)
    v7 = v6.unflatten(-1, (2, -1)).transpose(1, 2)
    v10 = F.linear(v3, p8, p9)
    v11 = v10.unflatten(-1, (2, -1)).transpose(1, 2)
    v14 = F.linear(v3, p12, p13)
    v15 = v14.unflatten(-1, (2, -1)).transpose(1, 2)
    v18 = v7 * p16 + torch.cat((-v7[..., 2:], v7[..., :2]), dim=-1) * p17
    v19 = v11 * p16 + torch.cat((-v11[..., 2:], v11[..., :2]), dim=-1) * p17
    v20 = v19.transpose(-2, -1)
    v21 = torch.matmul(v18, v20)
    v22 = v21 * 0.5
    v23 = v22.masked_fill(torch.ones(v22.shape[-2:], dtype=torch.bool, device=v22.device).triu(1), float('-inf'))
    v24 = torch.softmax(v23, dim=-1)
    v25 = torch.matmul(v24, v15)
    v26 = v25.transpose(1, 2).flatten(2)
    v29 = F.linear(v26, p27, p28)
    v30 = x0 + v29
    v32 = F.rms_norm(v30, (8,), p31, eps=1e-06)
    v35 = F.linear(v32, p33, p34)
    v36 = F.gelu(v35, approximate='none')
    v39 = F.linear(v36, p37, p38)
    v40 = v30 + v39
    v41 = v40 > 0.5
    return (v41,)


class M(torch.nn.Module):
    def __init__(self, ps):
        super().__init__()
        for i, p in enumerate(ps):  # p16, p17 (RoPE cos/sin; offset 1, row stride 7) are buffers
            if i in (8, 9):
                self.register_buffer(f"p{i}", p)
            else:
                setattr(self, f"p{i}", torch.nn.Parameter(p, requires_grad=False))
    def forward(self, x0):
        return model(x0, *[getattr(self, f"p{i}") for i in range(17)])


x0, *ps = torch.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "n22_aoti_attention_inputs.pt"), weights_only=True)
m = M(ps).eval()
with torch.no_grad():
    want = m(x0)[0]
    ref = model(x0.double(), *[p.double() for p in ps])[0]
    comp = torch.compile(m)(x0)[0]
    ep = torch.export.export(m, (x0,)).run_decompositions()  # as numfuzz does
    pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tempfile.mkdtemp(), "m.pt2"))
    aoti = torch._inductor.aoti_load_package(pkg)
    print("AOTI before load_constants: ", (aoti(x0)[0] != want).sum().item(), "differ from eager")
    # hand the buffers (offset 1 / row stride 7) back in, as a caller updating state does
    aoti.load_constants({"p8": m.p8, "p9": m.p9}, check_full_update=False)
    got = aoti(x0)[0]
print("torch", torch.__version__, "| bools:", want.numel())
print("float64 vs eager: ", (ref != want).sum().item(), "differ")
print("torch.compile vs eager:", (comp != want).sum().item(), "differ")
print("AOTInductor vs eager:  ", (got != want).sum().item(), "differ; AOTI vs float64:", (got != ref).sum().item())
sys.exit(1 if not torch.equal(got, want) else 0)

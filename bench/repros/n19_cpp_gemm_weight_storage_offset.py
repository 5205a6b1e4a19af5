"""N19: Inductor's C++ GEMM template (freezing + max_autotune, backends "CPP") packs a frozen
float32 Linear weight that is a view at storage offset 1 (a slice of one flat buffer) from the
wrong place: it reads the element before the weight (100.0 planted there). Default GEMM choice
and bfloat16 weights: exact. Cause N19 (§29; bench/raw/cpp_gemm_weight_storage_offset.py; family
of #143770). Checked on torch 2.15.0 CPU, 2026-12-06. Exit 1 while max |compiled - eager| > 1e-3."""
import sys
import torch
import torch._inductor.config as config

config.freezing, config.max_autotune, config.max_autotune_gemm_backends = True, True, "CPP"
torch.manual_seed(0)
flat = torch.randn(1 + 8 * 8)
flat[0] = 100.0  # not part of the weight: it must never be read
lin = torch.nn.Linear(8, 8, bias=False).eval()
lin.weight = torch.nn.Parameter(flat[1:].view(8, 8))  # storage offset 1
x = torch.randn(2, 8)
with torch.no_grad():
    want, got = lin(x), torch.compile(lin)(x)
    w64 = lin.weight.double()
err = (got - want).abs().max().item()
print("torch", torch.__version__, "| CPU capability:", torch.backends.cpu.get_cpu_capability())
print("eager    [0, :3]", want[0, :3].tolist())
print("float64  [0, :3]", (x.double() @ w64.t())[0, :3].tolist())
print("compiled [0, :3]", got[0, :3].tolist())
print("max |compiled - eager|:", err)
sys.exit(1 if err > 1e-3 else 0)

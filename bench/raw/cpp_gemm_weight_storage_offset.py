"""RESULTS §29: Inductor's C++ GEMM template reads a frozen weight from the wrong place when the
weight is a view at a non-zero storage offset (as when parameters are slices of one flat buffer).

    TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 python cpp_gemm_weight_storage_offset.py
torch 2.15.0 and 2.13.0, CPU (AVX-512), float32: max |compiled - eager| is about 76: the element
before the weight (100.0) is read. Without max_autotune (the default GEMM choice): 2.4e-07.
bfloat16 weights: exact. Found by numfuzz (a layout with an offset and a poisoned element
outside the view); its minimized case is cpp_gemm_weight_storage_offset_case.pt.
"""
import torch
import torch._inductor.config as config

config.freezing = True
config.max_autotune = True
config.max_autotune_gemm_backends = "CPP"  # Inductor's C++ GEMM template
torch.manual_seed(0)
flat = torch.randn(1 + 8 * 8)  # one flat buffer holding the weight from element 1 on
flat[0] = 100.0  # not part of the weight: it must never be read
lin = torch.nn.Linear(8, 8, bias=False).eval()
lin.weight = torch.nn.Parameter(flat[1:].view(8, 8))  # storage offset 1
x = torch.randn(2, 8)
with torch.no_grad():
    got, want = torch.compile(lin)(x), lin(x)
print("max |compiled - eager|:", (got - want).abs().max().item())

"""RESULTS §28: Inductor's C++ GEMM template corrupts the heap (torch 2.15.0, CPU, AVX-512).

Run under glibc's malloc checking to see it (exit 134, "free(): invalid pointer"):
    GLIBC_TUNABLES=glibc.malloc.check=3 \
    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0 \
    TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 python heap_corruption_cpp_gemm_plain.py
Clean under the same checking: freezing alone (the default GEMM choice), no uint8 head, or a
contiguous weight.
"""
import torch
import torch._inductor.config as config

config.freezing = True
config.max_autotune = True
config.max_autotune_gemm_backends = "CPP"  # the C++ GEMM template
torch.manual_seed(0)
lin = torch.nn.Linear(32, 32).bfloat16().eval()
lin.weight = torch.nn.Parameter(lin.weight.detach().t().contiguous().t())  # stride (1, 32)
x0 = torch.randn(1, 1, 32).bfloat16()
x1 = torch.randn(1, 1, 32).bfloat16()


def f(a, b):
    return (torch.clamp(torch.ceil(torch.log2((a + lin(b)).abs() + 1.0)), -127, 127)
            + 127).to(torch.uint8)


with torch.no_grad():
    print(torch.compile(f, fullgraph=True)(x0, x1).float().sum().item())

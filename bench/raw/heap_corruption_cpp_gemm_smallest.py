"""RESULTS §29: the C++ GEMM template writes bf16 values into a bool (or uint8/int8) output.

A bf16 Linear with a bias whose result is added to another input and then compared (or cast to
a 1-byte type) is one kernel: the GEMM template with the add and the comparison fused as its
epilogue. The template's own output buffer (the bias add, bf16) is aliased to the epilogue's
output Y (bool), so the kernel stores both through Y:
    tmp4.store(Y + ..., 16);   // 16 bf16 values: 32 bytes into a 16-byte stretch of bool
    tmp11.store(Y + ..., 16);  // the comparison, 16 bytes, overwrites the first half
The values come out right; the last tile writes 16 bytes past the end of Y.
(torch/_inductor/codegen/cpp_gemm_template.py: `Y_aliases.add(template_buffer.get_name())`
with no check that the template buffer's dtype is Y's.)

Run it under glibc's malloc checking (glibc 2.34+) to see the overflow (exit 134):
    GLIBC_TUNABLES=glibc.malloc.check=3 LD_PRELOAD=libc_malloc_debug.so.0 \
    TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 python heap_corruption_cpp_gemm_smallest.py
torch 2.15.0 and 2.13.0, CPU (AVX-512): free(): invalid pointer. float16 instead of bfloat16, or
float32: clean (the template keeps no separate bf16 store there).
"""
import torch
import torch._inductor.config as config

config.freezing = True
config.max_autotune = True
config.max_autotune_gemm_backends = "CPP"  # Inductor's C++ GEMM template
lin = torch.nn.Linear(32, 32).bfloat16().eval()
a, b = torch.randn(1, 32).bfloat16(), torch.randn(1, 32).bfloat16()
with torch.no_grad():
    out = torch.compile(lambda a, b: (a + lin(b)) > 0)(a, b)
    del out  # freeing Y is where glibc notices the overflow
print("no abort: the overflow went unnoticed (or is fixed)")

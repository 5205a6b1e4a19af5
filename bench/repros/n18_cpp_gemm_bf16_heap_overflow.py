"""N18: Inductor's C++ GEMM template (freezing + max_autotune, backends "CPP"): a bf16 Linear with
bias, added to another input and compared (> 0), is one kernel whose bf16 template buffer is
aliased to the 1-byte bool output Y (Y_aliases, no dtype check), so it stores 32 bytes of bf16
through Y: a heap overflow past Y's end. Seen only under glibc malloc checking: this script
re-runs itself in a child with it and checks for an abort. Found on AVX-512 (§28, §29;
bench/raw/heap_corruption_cpp_gemm_smallest.py); the kernel depends on the CPU's ISA.
Checked on torch 2.15.0 CPU, 2026-12-06. Exit 1 while the child aborts, 0 if it runs clean."""
import os, subprocess, sys
import torch

if os.environ.get("N18_CHILD"):
    import torch._inductor.config as config
    config.freezing, config.max_autotune, config.max_autotune_gemm_backends = True, True, "CPP"
    lin = torch.nn.Linear(32, 32).bfloat16().eval()
    a, b = torch.randn(1, 32).bfloat16(), torch.randn(1, 32).bfloat16()
    with torch.no_grad():
        out = torch.compile(lambda a, b: (a + lin(b)) > 0)(a, b)
        ok = torch.equal(out, (a + lin(b)) > 0)
        del out  # freeing Y is where glibc notices the overflow
    print("child: values match eager:", ok, "| no abort")
    sys.exit(0)
env = dict(os.environ, N18_CHILD="1", GLIBC_TUNABLES="glibc.malloc.check=3",
           LD_PRELOAD="libc_malloc_debug.so.0", TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
print("torch", torch.__version__, "| CPU capability:", torch.backends.cpu.get_cpu_capability())
r = subprocess.run([sys.executable, "-W", "ignore", __file__], env=env, capture_output=True, text=True)
lines = [l for l in (r.stdout + r.stderr).splitlines() if l.strip() and not l.startswith("W1")]
print(lines[-1] if lines else "", "| child exit status", r.returncode)
sys.exit(1 if r.returncode != 0 else 0)

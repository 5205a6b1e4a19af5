"""N5: a float16/bfloat16 reduction returned twice, (x.sum(0, keepdim=True),) * 2, fails to
compile on CPU Inductor: the C++ kernel stores the one reduction to two outputs and declares
its conversion temporary twice (CppCompileError: conflicting declaration 'auto at_Half_tmp_acc0_vec').
Eager runs it; float32 compiles. Cause N5 (fuzzer/causes.toml, §20 2nd night, crash-c11bc687ced8.pt).
Checked on torch 2.15.0 CPU, 2026-12-06. Exit 1 while compiling fails, 0 if it compiles and matches."""
import sys
import torch

f = lambda x: (x.sum(0, keepdim=True), x.sum(0, keepdim=True))
print("torch", torch.__version__)
bad = 0
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    torch._dynamo.reset()
    x = torch.randn(8, 15, dtype=dtype)
    try:
        got = torch.compile(f)(x)
        ok = all(torch.allclose(g.float(), e.float(), atol=1e-2) for g, e in zip(got, f(x)))
        print(f"{str(dtype):15s} compiled ok, matches eager: {ok}")
        bad += not ok
    except Exception as e:
        msg = [l.split("error:", 1)[1] for l in str(e).splitlines() if "error:" in l][:1] or [""]
        print(f"{str(dtype):15s} compile FAILED: {type(e).__name__}:{msg[0][:90]}")
        bad += 1
sys.exit(1 if bad else 0)

"""N10: CPU Inductor computes std::abs of int16_t/int8_t, which C++ promotes to int.
(a) x.view(torch.int16).abs().view(torch.float16) + 1 of a float16 tensor: CppCompileError
    (no bit_cast<c10::Half>(int&)); eager runs it. (Without the "+ 1" the bitcast is not fused and
    it compiles, so §24's one-line form no longer shows it on 2.15.)
(b) abs of INT16_MIN: compiled (x.abs() > 0) is True (+32768) where eager wraps to -32768 (False).
Cause N10 (§24, crash-3f0429054fa9; known family #187018). Checked on torch 2.15.0 CPU, 2026-12-06.
Exit 1 while (a) fails to compile or (b) differs from eager, 0 if neither."""
import sys
import torch

print("torch", torch.__version__)
bad = 0
fa = lambda x: x.view(torch.int16).abs().view(torch.float16) + 1
x = torch.randn(4, 8, dtype=torch.float16)
try:
    ok = torch.equal(torch.compile(fa)(x), fa(x))
    print("(a) float16 view(int16).abs().view(float16) + 1: compiled, matches eager:", ok)
    bad += not ok
except Exception as e:
    msg = [l.split("error:", 1)[1] for l in str(e).splitlines() if "error:" in l][:1] or [""]
    print(f"(a) float16 view(int16).abs().view(float16) + 1: compile FAILED: {type(e).__name__}:{msg[0][:80]}")
    bad += 1
torch._dynamo.reset()
fb = lambda t: t.abs() > 0
t = torch.full((16,), -32768, dtype=torch.int16)
e, c = fb(t), torch.compile(fb)(t)
print(f"(b) abs(int16 -32768) > 0: eager {e[0].item()}, compiled {c[0].item()}")
bad += not torch.equal(e, c)
sys.exit(1 if bad else 0)

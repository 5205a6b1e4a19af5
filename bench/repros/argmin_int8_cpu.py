"""torch.compile (Inductor, CPU) argmin / min(dim).indices of int8/uint8 rows of >= 8 elements
returns 0 or an out-of-range garbage index: the vectorized kernel reduces the unused lanes of a
short Vectorized<int8_t> and reads their uninitialised index slots (see argmin_int8_cpu.md).
Checked on torch 2.15.0+cu132 and 2.13.0+cpu, x86-64 AVX2. Exit 1 while the bug reproduces, 0 if not."""
import sys
import torch

u8 = torch.arange(17, 1, -1).to(torch.uint8).reshape(1, 16)  # minimum 2 is the last element
r3 = ((torch.arange(48) * 37 + 35) % 200 + 2).to(torch.uint8).reshape(3, 16)
cases = [
    ("argmin(uint8 1x16, dim=1)", lambda t: torch.argmin(t, dim=1), u8),
    ("argmin(int8 1x16, dim=1)", lambda t: torch.argmin(t, dim=1), u8.to(torch.int8)),
    ("argmin(uint8 1x16), no dim", lambda t: torch.argmin(t), u8),
    ("torch.min(uint8 3x16, dim=1)[1]", lambda t: torch.min(t, dim=1)[1], r3),
]
bad = 0
for name, fn, x in cases:
    e, c = fn(x), torch.compile(fn, dynamic=False)(x)
    ok = torch.equal(e, c)
    bad += not ok
    print(f"{'ok ' if ok else 'BAD'} {name}: eager {e.tolist()} compiled {c.tolist()}")
print(f"torch {torch.__version__}: {bad} of {len(cases)} cases wrong")
sys.exit(1 if bad else 0)

"""Accumulating writes into 8- and 16-bit integer tensors on CUDA under torch.compile.

Triton has no atomic add for integers narrower than 32 bits (triton/language/semantic.py:
``_validate_atomic_rmw_element_type``), and Inductor falls back to eager's kernel only for
int64 and bool (``needs_fallback_due_to_atomic_add_limitations``). A state case of the GPU run
(RESULTS §4, ``scatter_reduce_`` through an int16 view) failed to compile there. This measures
which accumulating writes fail, per dtype, with int32 as the control: one line per pair.
Run on a GPU: ``PYTHONPATH=. python bench/gpu_int_atomics.py``."""

from __future__ import annotations

import sys

import torch

WRITES = {
    "index_add_": lambda x, i, v: x.index_add_(0, i, v),
    "index_put_(accumulate=True)": lambda x, i, v: x.index_put_((i,), v, accumulate=True),
    "scatter_add_": lambda x, i, v: x.scatter_add_(0, i, v),
    "scatter_reduce_(sum)": lambda x, i, v: x.scatter_reduce_(0, i, v, reduce="sum"),
}
DTYPES = [torch.int32, torch.int16, torch.uint16, torch.int8, torch.uint8]


def check(name: str, dtype: torch.dtype, device: str) -> str:
    def f(x, i, v):
        WRITES[name](x, i, v)
        return x

    x = torch.zeros(8, dtype=dtype, device=device)
    i = torch.tensor([1, 1, 3, 7], device=device)
    v = torch.tensor([1, 2, 3, 4], dtype=dtype, device=device)
    want = f(x.clone(), i, v)
    torch._dynamo.reset()
    try:
        got = torch.compile(f)(x.clone(), i, v)
    except Exception as err:
        first = str(err).strip().splitlines()
        cause = next((ln for ln in first if "does not support" in ln), first[0] if first else "")
        return f"compile error: {type(err).__name__}: {cause[:120]}"
    if torch.equal(got, want):
        return "same as eager"
    return f"WRONG: {got.tolist()} vs {want.tolist()}"


def main() -> int:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"torch {torch.__version__} on {device}"
          f"{' ' + torch.cuda.get_device_name(0) if device == 'cuda' else ''}")
    failed = 0
    for name in WRITES:
        for dtype in DTYPES:
            try:
                line = check(name, dtype, device)
            except Exception as err:  # eager itself refuses this dtype
                line = f"eager refuses: {type(err).__name__}: {str(err).splitlines()[0][:80]}"
            failed += not line.startswith(("same", "eager refuses"))
            print(f"{name:28s} {str(dtype):14s} {line}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""RESULTS §29: AOTAutograd fails on an output that is a view of an argument aliasing another,
mutated, argument (torch 2.15.0 and 2.13.0, CPU; default torch.compile).

    TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 python aliased_args_output_view_viewmeta.py
AssertionError: incorrect out shape after application of ViewMeta sequence: (1, 6) (actual) vs
(1, 3) (expected)   (functional_utils.py, gen_alias_from_base). Without the write to x it runs.
numfuzz's minimized case (state strategy, found under the C++ GEMM template campaign but not
of it): x0[3:] = x3; return v1.diagonal(0, 0, 1), with v1 = x0[3:, :, 3:].
"""
import torch


def f(x, y, v):  # v is a view of x, passed beside it
    x[3:] = y
    return v[0]


x, y = torch.randn(4, 1, 6), torch.randn(1, 1, 6)
print("eager:", f(x.clone(), y, x.clone()[3:, :, 3:]).shape)
print("compiled:", torch.compile(f)(x, y, x[3:, :, 3:]).shape)

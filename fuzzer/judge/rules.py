"""The per-output divergence rules, written once.

``oracle`` decides every output's kind with ``output_kind``; ``repro.py`` embeds this file's
functions verbatim (``embedded_source``), so a repro judges exactly as numfuzz did. Plain torch
only: a repro must run with nothing but torch installed.
"""

import torch


def discrete_flips(eager, compiled, ref, undefined=None):
    """Elements of a discrete output that differ, where float64 does not side with compiled."""
    differ = eager != compiled
    if undefined is not None:
        differ = differ & ~undefined
    return differ & (ref.to(eager.dtype) != compiled)


def nonfinite_in_compiled(eager, compiled, ref):
    """inf/NaN in compiled where eager and float64 are finite."""
    return torch.isfinite(eager) & torch.isfinite(ref) & ~torch.isfinite(compiled)


def nonfinite_in_eager(eager, compiled, ref):
    """inf/NaN in eager where compiled is finite."""
    return ~torch.isfinite(eager) & torch.isfinite(compiled)


def fails_same(eager, compiled, ref, tol):
    """PyTorch's own accuracy rule against the float64 reference (torch._dynamo.utils.same)."""
    from torch._dynamo.utils import same

    return not same(eager, compiled, fp64_ref=ref, tol=tol, equal_nan=True, exact_dtype=True,
                    log_error=lambda *args, **kwargs: None)


def output_kind(eager, compiled, ref, tol, undefined=None):
    """One output's divergence kind, the most severe rule that fires; "ok" when none does."""
    if compiled.shape != eager.shape or compiled.dtype != eager.dtype:
        return "crash"
    compiled = compiled.to(eager.device)
    if not eager.is_floating_point():
        return "int-flip" if bool(discrete_flips(eager, compiled, ref, undefined).any()) else "ok"
    if bool(nonfinite_in_compiled(eager, compiled, ref).any()):
        return "nonfinite"
    if bool(nonfinite_in_eager(eager, compiled, ref).any()):
        return "eager-nonfinite"
    return "accuracy" if fails_same(eager, compiled, ref, tol) else "ok"


def embedded_source() -> str:
    """This module's rules as source text, for a repro to carry (everything after the imports)."""
    import inspect
    import sys

    text = inspect.getsource(sys.modules[__name__])
    body = text.split("\nimport torch\n", 1)[1]
    return body.split("\ndef embedded_source", 1)[0].strip() + "\n"

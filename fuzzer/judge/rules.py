"""The per-output divergence rules, written once: PyTorch's own rule, element by element.

The maintainers' rule is "compiled no worse than eager against float64". Per output:

- shapes or dtypes differ between eager and compiled: ``meta``;
- discrete codes (int, uint8, bool, sign): an element *regresses* where compiled is strictly
  further from float64's code than eager's (ordinal codes by ``|code - float64|``; bool and sign
  codes by being wrong at all). No regressing element: ``benign`` if codes differ, else ``ok``.
  A regressing element is *strong* evidence when float64's value at the head's input sits
  farther from the head's discontinuity than ``STRONG_MARGIN`` times the noise eager makes there
  (its error ``|x_eager - x_fp64|`` at that element, or the ``NOISE_QUANTILE`` of its errors
  over the head input if larger) and at least ``STRONG_ULPS`` ulps of the working dtype away;
  no element is strong when a float step further up the graph (``round``, ``x // c``, not the
  one the head reads directly, which is where it is measured) has an element within eager's noise
  of its own jump (``on_a_tie``); every regressing element is strong when nothing upstream of the
  output is a float (integer
  arithmetic has no rounding noise: the caller passes ``strong`` all true). Otherwise eager's own
  rounding could have put it on either side, and the flip is ``weak-flip``. With no head known
  (a user's model judged on its outputs alone) an ordinal code more than one step from both
  eager's and float64's is strong. (With a head known, steps prove nothing: a fine int8 scale
  puts many codes inside one ulp of noise.)
  ``int-flip`` needs one strong element. Under the eager-parity policy (``--policy parity``:
  eager's rounding is the spec) every other discrete mismatch is a ``parity`` finding, its
  elements still classed as regressing or benign;
- floats: ``nonfinite`` where compiled is inf/NaN and eager and float64 are finite;
  ``hidden-nonfinite`` where eager and float64 are non-finite and compiled is finite; elements
  where compiled is closer (eager overflowed, float64 finite, compiled finite; or compiled is the
  very non-finite float64 has) are benign and left out of PyTorch's ``same`` test, which decides
  ``accuracy`` on the rest.

The margins come from data (bench/RESULTS.md §9): in a 300-case CPU campaign eager's own error
at a head's input was 2 to 50 ulps at the 99th percentile of a tensor for most half-precision
graphs, while single elements were often exact; graded by each element's own error, 37 flips
were "strong", 16 of them within 1.5 ulps of the boundary. Graded against the tensor's
99th-percentile noise, and with float steps measured where they jump, 6 remain.

``oracle`` decides every output's kind with ``output_kind``; ``repro.py`` embeds this file's
functions verbatim (``embedded_source``), so a repro judges exactly as numfuzz did. Plain torch
only: a repro must run with nothing but torch installed.
"""

import torch

STRONG_MARGIN = 4.0
STRONG_ULPS = 1.0
NOISE_QUANTILE = 0.99


def float64_run(fn, inputs):
    """The float64 reference: ``fn`` on its inputs with every float widened to float64, run with
    float64 as the default dtype, so that values an integer tensor promotes to (``n * 0.5``,
    ``torch.true_divide``, a ``linspace``) are float64 too rather than float32."""
    wide = [t.double() if t.is_floating_point() else t for t in inputs]
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return fn(*wide)
    finally:
        torch.set_default_dtype(saved)


def forward_backward(fn, inputs):
    """What a training run is judged on: ``fn``'s outputs, then the gradient of the sum of its
    float outputs with respect to each float input in order (weights are inputs too; zeros
    where an input does not reach them). The inputs keep their layouts (``detach`` is a view)."""
    leaves = [t.detach().requires_grad_(t.is_floating_point()) for t in inputs]
    outputs = list(fn(*leaves))
    wrt = [t for t in leaves if t.requires_grad]
    reached = [o for o in outputs if o.requires_grad]
    grads = [None] * len(wrt)
    if reached and wrt:
        grads = torch.autograd.grad(reached, wrt, [torch.ones_like(o) for o in reached],
                                    allow_unused=True)
    return [o.detach() for o in outputs] + \
        [torch.zeros_like(w) if g is None else g for g, w in zip(grads, wrt)]


def discrete_regressions(eager, compiled, ref, undefined=None, ordinal=True):
    """Elements where compiled's code is strictly further from float64's than eager's."""
    ref = ref.to(eager.dtype)
    if ordinal and eager.dtype != torch.bool:
        eager_off = (eager.long() - ref.long()).abs()
        compiled_off = (compiled.long() - ref.long()).abs()
    else:
        eager_off, compiled_off = (eager != ref).long(), (compiled != ref).long()
    worse = compiled_off > eager_off
    return worse if undefined is None else worse & ~undefined


def discrete_mismatches(eager, compiled, undefined=None):
    """Elements where the codes differ at all (what a parity check would report)."""
    differ = eager != compiled
    return differ if undefined is None else differ & ~undefined


def spacing(magnitude, working):
    """The gap between adjacent ``working``-dtype floats at ``magnitude`` (float64 result)."""
    info = torch.finfo(working)
    at = magnitude.abs().clamp(max=info.max).to(working)
    return (torch.nextafter(at, torch.full_like(at, float("inf"))) - at).double()


def evidence(x_fp64, point, x_eager, working):
    """Per element: float64's distance from the boundary and the noise eager itself makes there,
    both in ulps of the working dtype at the boundary, and whether the distance is strong
    evidence. Eager's noise is the larger of its error at this element and the
    ``NOISE_QUANTILE`` of its errors over the whole head input: one lucky exact element does
    not make eager's rounding precise."""
    distance = (x_fp64 - point).abs()
    ulp = spacing(torch.maximum(x_fp64.abs(), point.abs()), working)
    own = (x_eager.double() - x_fp64).abs() / ulp
    finite = own[torch.isfinite(own)].reshape(-1)
    typical = 0.0
    if finite.numel():
        k = max(1, min(finite.numel(), int(NOISE_QUANTILE * finite.numel() + 0.5)))
        typical = float(finite.kthvalue(k).values)
    noise = own.clamp(min=typical)
    strong = (distance / ulp > STRONG_MARGIN * noise) & (distance / ulp >= STRONG_ULPS)
    return distance / ulp, noise, strong


def head_evidence(fp64_inputs, eager_input, boundary, attrs, shape, working):
    """A head's elements: float64's value at its input, its distance from the head's
    discontinuity (``boundary``, from the op registry) and eager's noise there, in ulps, and
    whether that is strong (``evidence``)."""
    x = torch.broadcast_to(fp64_inputs[0], shape)
    point = torch.broadcast_to(boundary(fp64_inputs, attrs), shape)
    ulps, eager_ulps, strong = evidence(x, point, torch.broadcast_to(eager_input, shape), working)
    return x, ulps, eager_ulps, strong


def on_a_tie(fp64_inputs, eager_input, boundary, attrs, working):
    """Does any element of a float step further up a head's graph (``x // c``, ``round``) sit
    within the noise eager makes of that step's own jump? There compiled may land on the other
    side, and the jump travels down to the head, so no flip of the head is strong evidence."""
    x = fp64_inputs[0]
    _, _, strong = evidence(x, boundary(fp64_inputs, attrs), eager_input, working)
    return bool((~strong & torch.isfinite(x)).any())


def strong_regressions(eager, compiled, ref, regress, strong=None, ordinal=True):
    """Regressing elements that are strong evidence (see the module docstring): float64 far from
    the head's discontinuity (``strong``, per element, when the head is known); with no head
    known, an ordinal code more than one step from both eager's and float64's."""
    if strong is not None:
        return regress & strong
    if not ordinal or eager.dtype == torch.bool:
        return torch.zeros_like(regress)
    ref = ref.to(eager.dtype).long()
    steps = (compiled.long() - eager.long()).abs().minimum((compiled.long() - ref).abs())
    return regress & (steps > 1)


def nonfinite_in_compiled(eager, compiled, ref):
    """inf/NaN in compiled where eager and float64 are finite."""
    return torch.isfinite(eager) & torch.isfinite(ref) & ~torch.isfinite(compiled)


def nonfinite_hidden(eager, compiled, ref):
    """Compiled finite where eager and float64 are both non-finite."""
    return ~torch.isfinite(eager) & ~torch.isfinite(ref) & torch.isfinite(compiled)


def nonfinite_benign(eager, compiled, ref):
    """Compiled closer than eager: eager overflowed where float64 and compiled are finite, or
    compiled is the very non-finite value float64 has."""
    c_fin, r_fin = torch.isfinite(compiled), torch.isfinite(ref)
    as_ref = (torch.isnan(compiled) & torch.isnan(ref)) | (~c_fin & (compiled == ref))
    return (~torch.isfinite(eager) & r_fin & c_fin) | (torch.isfinite(eager) & ~c_fin & as_ref)


def fails_same(eager, compiled, ref, tol, ignore=None):
    """PyTorch's own accuracy rule against the float64 reference (torch._dynamo.utils.same),
    on every element but those in ``ignore``."""
    from torch._dynamo.utils import same

    if ignore is not None and bool(ignore.any()):
        eager = torch.where(ignore, ref.to(eager.dtype), eager)
        compiled = torch.where(ignore, ref.to(compiled.dtype), compiled)
    return not same(eager, compiled, fp64_ref=ref, tol=tol, equal_nan=True, exact_dtype=True,
                    log_error=lambda *args, **kwargs: None)


def torch_frames(err, depth=3):
    """Where in torch an exception was raised: the innermost ``depth`` frames inside torch of
    its innermost cause, as ``torch/_inductor/lowering.py:make_pointwise``."""
    import traceback

    while err.__cause__ is not None:
        err = err.__cause__
    frames = traceback.extract_tb(err.__traceback__)
    paths = [(f.filename.replace("\\", "/"), f.name) for f in frames]
    inside = [f"torch/{path.rsplit('/torch/', 1)[1]}:{name}" for path, name in paths
              if "/torch/" in path]
    return inside[-depth:]


def output_kind(eager, compiled, ref, tol, undefined=None, ordinal=True, strong=None,
                parity=False):
    """One output's kind: the most severe rule that fires, else ``benign`` or ``ok``.

    ``strong``: per element, whether float64 sits far enough from the head's discontinuity
    (``evidence``); None when the head is unknown. ``parity`` (the eager-parity policy): a
    discrete mismatch that is not a strong regression is ``parity`` instead of ``weak-flip`` or
    ``benign``."""
    if compiled.shape != eager.shape or compiled.dtype != eager.dtype:
        return "meta"
    compiled = compiled.to(eager.device)
    if not eager.is_floating_point():
        regress = discrete_regressions(eager, compiled, ref, undefined, ordinal)
        if bool(strong_regressions(eager, compiled, ref, regress, strong, ordinal).any()):
            return "int-flip"
        if bool(regress.any()):
            return "parity" if parity else "weak-flip"
        if bool(discrete_mismatches(eager, compiled, undefined).any()):
            return "parity" if parity else "benign"
        return "ok"
    if bool(nonfinite_in_compiled(eager, compiled, ref).any()):
        return "nonfinite"
    if bool(nonfinite_hidden(eager, compiled, ref).any()):
        return "hidden-nonfinite"
    benign = nonfinite_benign(eager, compiled, ref)
    if fails_same(eager, compiled, ref, tol, ignore=benign):
        return "accuracy"
    return "benign" if bool(benign.any()) else "ok"


def embedded_source() -> str:
    """This module's rules as source text, for a repro to carry (everything after the imports)."""
    import inspect
    import sys

    text = inspect.getsource(sys.modules[__name__])
    body = text.split("\nimport torch\n", 1)[1]
    return body.split("\ndef embedded_source", 1)[0].strip() + "\n"

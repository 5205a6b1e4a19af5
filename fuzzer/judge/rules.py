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
  puts many codes inside one ulp of noise.) Either way an element is strong only where
  float64's own code is *stable*: the same in ``NUDGES`` float64 runs in which every value
  eager rounds (each float node but the exact ones: views, selections, steps) is moved by the
  size of that rounding, anywhere up or down per element (``nudge_``): the noise eager makes
  upstream of the head. A chaotic head (the remainder of a value amplified a million times,
  then its exponent) moves float64's code by several steps under that noise: eager's rounding
  alone could land anywhere there, so no flip of it is evidence;
  ``int-flip`` needs one strong element. Where float64 cannot stand for the program (a dtype
  view reinterprets bits), eager's own values are the reference, against which eager's error is
  zero: its noise is then taken as at least ``EAGER_NOISE_FLOOR`` ulps (``floor``), the
  rounding of the op that computed the head's input and of the one before it, half an ulp
  each, so that a flip one ulp from its boundary is as weak there as anywhere. Under the
  eager-parity policy (``--policy parity``:
  eager's rounding is the spec) every other discrete mismatch is a ``parity`` finding, its
  elements still classed as regressing or benign;
- index outputs (argmax, sort's and topk's indices, max_pool2d's): judged by the value each
  index picks from the op's input in float64, never as raw indices (``selection_codes``): the
  code is that value's rank, so equal values picked by different indices are the same code (a
  tie, an unstable sort) unless a stable sort defines their order; compiled *regresses* where
  its pick ranks further from float64's pick than eager's does, and the regression is strong
  where the value it picks is farther from float64's pick than ``STRONG_MARGIN`` times eager's
  noise at the input (``selection_evidence``);
- floats: ``nonfinite`` where compiled is inf/NaN and eager and float64 are finite;
  ``hidden-nonfinite`` where eager and float64 are non-finite and compiled is finite; elements
  where compiled is closer (eager overflowed, float64 finite, compiled finite; or compiled is the
  very non-finite float64 has) are benign and left out of PyTorch's ``same`` test, which decides
  ``accuracy`` on the rest; ``signed-zero`` where compiled gives a zero the other sign than eager
  and float64's exact zero, in an output whose zeros' sign the program defines
  (``zero_sign_regressions``: a tolerance cannot see it, ``1 / x`` then gives -inf for inf).

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
from torch.overrides import TorchFunctionMode

STRONG_MARGIN = 4.0
STRONG_ULPS = 1.0
NOISE_QUANTILE = 0.99
EAGER_NOISE_FLOOR = 1.0  # ulps: eager's noise where eager's own values are the reference


def float64_run(fn, inputs):
    """The float64 reference: ``fn`` on its inputs with every float widened to float64 (copies,
    even of a float64 or an integer input: nothing ``fn`` does in place reaches the caller's
    tensors), run with float64 as the default dtype, so that values an integer tensor promotes
    to (``n * 0.5``, ``torch.true_divide``, a ``linspace``) are float64 too, not float32; and
    with ``pow`` as IEEE 754 defines it (``IeeePow``)."""
    wide = [t.to(torch.float64, copy=True) if t.is_floating_point() else fresh(t)
            for t in inputs]
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with IeeePow():
            return fn(*wide)
    finally:
        torch.set_default_dtype(saved)


class IeeePow(TorchFunctionMode):
    """``pow`` of a tensor by a scalar exponent of +-0.5 as IEEE 754 defines it. Eager takes a
    shortcut there (``sqrt``, ``rsqrt``) that gives other values at -0.0 and -inf
    (``pow(-inf, -0.5)``: nan, not +0; ``pow(-0.0, -0.5)``: -inf, not +inf; pytorch#127163),
    and Inductor does not: a reference sharing eager's shortcut called the compiled side wrong
    where it was right (RESULTS §26). The tensor-exponent form has no shortcut."""

    FUNCTIONS = (torch.pow, torch.Tensor.pow, torch.Tensor.__pow__, torch.Tensor.pow_,
                 torch.Tensor.__ipow__)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        base, exponent = (list(args) + [kwargs.get("exponent")])[:2]
        if func in self.FUNCTIONS and isinstance(base, torch.Tensor) and \
                base.is_floating_point() and isinstance(exponent, float) and \
                abs(exponent) == 0.5:
            exponent = torch.tensor(exponent, dtype=base.dtype, device=base.device)
            return func(base, exponent, **{k: v for k, v in kwargs.items() if k != "exponent"})
        return func(*args, **kwargs)


def fresh(t, device=None):
    """An exact copy of ``t`` with its layout, on ``device`` (default: its own): the same strides
    and storage offset over a copy of its whole storage. A program that writes its inputs gets
    new ones on every run (eager twice, compiled twice, float64), and a transposed, strided,
    expanded or offset input stays one, on a GPU too (``.to(device)`` would make it contiguous)."""
    t = t.detach()
    device = t.device if device is None else torch.device(device)
    whole = torch.empty(0, dtype=t.dtype, device=t.device)
    whole.set_(t.untyped_storage(), 0, (t.untyped_storage().nbytes() // t.element_size(),), (1,))
    whole = whole.to(device, copy=True)
    copy = torch.empty(0, dtype=t.dtype, device=device)
    copy.set_(whole.untyped_storage(), t.storage_offset(), t.shape, t.stride())
    return copy


def same_bits(a, b):
    """Equal element for element, NaN equal to NaN (in the same places)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    b = b.to(a.device)
    if a.is_floating_point():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return bool((a == b).all())


def rows_apart(outputs, row_outputs):
    """The batch-invariance promise: per output, the rows (first dim) computed in the batch
    (``outputs``) whose bits differ from the same row computed alone (``row_outputs``: per row,
    the outputs of that row's call)."""
    apart = []
    for i, whole in enumerate(outputs):
        apart.append([r for r, alone in enumerate(row_outputs)
                      if not same_bits(whole[r:r + 1].cpu(), alone[i].cpu())])
    return apart


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


def evidence(x_fp64, point, x_eager, working, floor=0.0):
    """Per element: float64's distance from the boundary and the noise eager itself makes there,
    both in ulps of the working dtype at the boundary, and whether the distance is strong
    evidence. Eager's noise is the larger of its error at this element and the
    ``NOISE_QUANTILE`` of its errors over the whole head input: one lucky exact element does
    not make eager's rounding precise; and at least ``floor`` ulps (``EAGER_NOISE_FLOOR`` where
    eager's values stand for float64's, 0 otherwise)."""
    distance = (x_fp64 - point).abs()
    ulp = spacing(torch.maximum(x_fp64.abs(), point.abs()), working)
    own = (x_eager.double() - x_fp64).abs() / ulp
    finite = own[torch.isfinite(own)].reshape(-1)
    typical = 0.0
    if finite.numel():
        k = max(1, min(finite.numel(), int(NOISE_QUANTILE * finite.numel() + 0.5)))
        typical = float(finite.kthvalue(k).values)
    noise = own.clamp(min=max(typical, floor))
    strong = (distance / ulp > STRONG_MARGIN * noise) & (distance / ulp >= STRONG_ULPS)
    return distance / ulp, noise, strong


def head_evidence(fp64_inputs, eager_input, boundary, attrs, shape, working, floor=0.0):
    """A head's elements: float64's value at its input, its distance from the head's
    discontinuity (``boundary``, from the op registry) and eager's noise there (at least
    ``floor``), in ulps, and whether that is strong (``evidence``)."""
    x = torch.broadcast_to(fp64_inputs[0], shape)
    point = torch.broadcast_to(boundary(fp64_inputs, attrs), shape)
    ulps, eager_ulps, strong = evidence(x, point, torch.broadcast_to(eager_input, shape), working,
                                        floor)
    return x, ulps, eager_ulps, strong


def on_a_tie(fp64_inputs, eager_input, boundary, attrs, working, floor=0.0):
    """Does any element of a float step further up a head's graph (``x // c``, ``round``) sit
    within the noise eager makes of that step's own jump? There compiled may land on the other
    side, and the jump travels down to the head, so no flip of the head is strong evidence."""
    x = fp64_inputs[0]
    _, _, strong = evidence(x, boundary(fp64_inputs, attrs), eager_input, working, floor)
    return bool((~strong & torch.isfinite(x)).any())


def strong_regressions(eager, compiled, ref, regress, strong=None, ordinal=True, stable=None):
    """Regressing elements that are strong evidence (see the module docstring): float64 far from
    the head's discontinuity (``strong``, per element, when the head is known); with no head
    known, an ordinal code more than one step from both eager's and float64's; and in both
    cases float64's code ``stable`` under input noise (``stable_codes``; None: not measured,
    as for a code no float feeds)."""
    if strong is not None:
        kept = regress & strong
    elif not ordinal or eager.dtype == torch.bool:
        return torch.zeros_like(regress)
    else:
        ref = ref.to(eager.dtype).long()
        steps = (compiled.long() - eager.long()).abs().minimum((compiled.long() - ref).abs())
        kept = regress & (steps > 1)
    return kept if stable is None else kept & stable.to(kept.device)


NUDGES = 8  # seeded runs with every rounding op's value nudged: float64's code must survive all


def nudge_(value, dtype, k, node):
    """In place: ``value``, the float64 value of a node that eager computes in ``dtype`` and
    rounds there, moved by up to that rounding's size: by ``u`` times the larger of
    ``|value| * eps`` and the subnormal spacing ``tiny * eps`` (below ``tiny`` a rounding is
    absolute, not relative), with ``u`` drawn uniformly in [-1, 1] per element (so anywhere
    in the interval eager's rounding may land) from a generator seeded with (``k``, ``node``):
    the same nudges in numfuzz and in a repro. An element ``dtype`` holds exactly (``3.0``
    after a floor division, a small product of integers) had nothing to round and stays, as do
    zeros, infinities and NaNs; a value whose elements share memory (an expanded view) is left
    as it is."""
    if not value.is_floating_point() or value.numel() == 0:
        return
    gen = torch.Generator().manual_seed(k * 1_000_003 + node)
    u = torch.rand(value.shape, generator=gen, dtype=torch.float64) * 2 - 1
    info = torch.finfo(dtype)
    held = (value.to(dtype).to(value.dtype) == value).cpu()
    wide = value.detach().double().cpu()
    size = torch.clamp(wide.abs() * info.eps, min=info.tiny * info.eps)
    moved = torch.where(held, wide, wide + u * size).to(value.device, value.dtype)
    with torch.no_grad():
        try:
            value.copy_(moved)
        except RuntimeError:  # overlapping memory: not a value of its own to nudge
            pass


def stable_codes(ref, nudged_refs):
    """Per element: is float64's code the same in every nudged run (``nudge_``)? A run that gave
    another shape or dtype counts as unstable everywhere."""
    stable = torch.ones(ref.shape, dtype=torch.bool, device=ref.device)
    for other in nudged_refs:
        if other.shape != ref.shape or other.dtype != ref.dtype:
            return torch.zeros_like(stable)
        stable &= (other == ref) | (other.isnan() & ref.isnan()) \
            if ref.is_floating_point() else other == ref
    return stable


def step_bits_(value, k, node):
    """In place: ``value``, a float in the dtype eager computes it in, moved one step of that
    dtype up or down per element (the direction drawn from a generator seeded with (``k``,
    ``node``)): the rounding a compiled kernel may do otherwise there (another order of
    accumulation, an intermediate kept wider). Run on the float a dtype view is about to
    reinterpret (``render_bit_noise_trace``), it shows which elements of a program judged by
    eager's values such noise moves: there the bits, amplified, are no evidence. Non-finite
    elements stay; so does a value whose elements share memory."""
    if not value.is_floating_point() or value.numel() == 0:
        return
    gen = torch.Generator().manual_seed(k * 1_000_003 + node)
    sign = (torch.rand(value.shape, generator=gen) < 0.5).double() * 2 - 1
    wide = value.detach().double().cpu()
    moved = wide + sign * spacing(wide, value.dtype)
    moved = torch.where(torch.isfinite(wide), moved, wide).to(value.device, value.dtype)
    with torch.no_grad():
        try:
            value.copy_(moved)
        except RuntimeError:  # overlapping memory: not a value of its own to move
            pass


def moved_by_noise(base, runs, tols):
    """Per output, the elements that the runs with noise (``step_bits_``) move away from
    ``base`` (eager unperturbed): a float further than its tolerance (``tols``, per output,
    relative and absolute, as ``same`` reads it; NaN equal to NaN), any other value at all;
    None where no run moves any. A run that gave another shape or dtype moves everything."""
    masks = []
    for i, (b, tol) in enumerate(zip(base, tols)):
        moved = torch.zeros(b.shape, dtype=torch.bool)
        for run in runs:
            r = run[i]
            if r.shape != b.shape or r.dtype != b.dtype:
                moved = torch.ones(b.shape, dtype=torch.bool)
                break
            r, b_ = r.cpu(), b.cpu()
            if b_.is_floating_point():
                moved |= ~torch.isclose(r.double(), b_.double(), rtol=tol, atol=tol,
                                        equal_nan=True)
            else:
                moved |= r != b_
        masks.append(moved if bool(moved.any()) else None)
    return masks


def selection_codes(x, picked, index, valid, ordered=False):
    """An index output (argmax, sort's indices) as codes the discrete rules compare: per
    element, the rank of the value its index picks (``picked``, from ``x``, the float64 value
    of the op's input) among all of ``x``: how many elements are smaller, NaN above every number.
    Equal values get equal codes, so another index among equal values is no divergence, and a
    worse pick sits further from float64's code. Where the order of equal values is defined
    (``ordered``: a stable sort) the index itself breaks the tie. An index out of range
    (``valid`` false) is further from every code than any other."""
    flat = x.reshape(-1).cpu()
    flat = flat.double() if flat.is_floating_point() else flat.long()
    picked = picked.cpu().to(flat.dtype)
    n = flat.numel()
    if flat.is_floating_point():
        keys = torch.sort(flat[~flat.isnan()]).values
        rank = torch.searchsorted(keys, picked.nan_to_num(nan=0.0).contiguous())
        rank = torch.where(picked.isnan(), torch.full_like(rank, n), rank)
    else:
        rank = torch.searchsorted(torch.sort(flat).values, picked.contiguous())
    codes = rank * (n + 1) + index.cpu().long().clamp(min=0) if ordered else rank
    return torch.where(valid.cpu(), codes, torch.full_like(codes, -(n + 1) * (n + 2)))


def selection_noise(x_fp64, x_eager, working):
    """Eager's noise at an index op's input: per element its error in ulps of the working
    dtype (zero where it equals float64, NaN included; one ulp is 1 for integers), and the
    ``NOISE_QUANTILE`` of its finite errors over the input."""
    x, e = x_fp64.double().cpu(), x_eager.double().cpu()
    same = (x == e) | (x.isnan() & e.isnan())
    ulp = spacing(x, working) if working.is_floating_point else torch.ones_like(x)
    own = torch.where(same, torch.zeros_like(x), (e - x).abs() / ulp)
    finite = own[torch.isfinite(own)].reshape(-1)
    typical = 0.0
    if finite.numel():
        k = max(1, min(finite.numel(), int(NOISE_QUANTILE * finite.numel() + 0.5)))
        typical = float(finite.kthvalue(k).values)
    return own, typical


def selection_evidence(best, chosen, noise, working, ordered=False):
    """Per element of an index output: how far the value compiled's index picks (``chosen``,
    float64) is from the one float64's own index picks (``best``), in ulps of the working dtype
    (one NaN and not the other: infinitely far), and whether that is strong evidence: farther
    than ``STRONG_MARGIN`` times eager's noise there (``noise``, per element) and at least
    ``STRONG_ULPS``. Equal values in another order than a stable sort's (``ordered``) are
    strong where eager makes no noise at all: with the input exact, only the order differs."""
    best, chosen = best.double().cpu(), chosen.double().cpu()
    ulp = spacing(torch.maximum(best.abs(), chosen.abs()), working) \
        if working.is_floating_point else torch.ones_like(best)
    distance = (chosen - best).abs() / ulp
    distance = torch.where(best.isnan() != chosen.isnan(), float("inf"), distance)
    distance = torch.where((best == chosen) | (best.isnan() & chosen.isnan()), 0.0, distance)
    strong = (distance > STRONG_MARGIN * noise) & (distance >= STRONG_ULPS)
    if ordered:
        strong |= (distance == 0) & (noise == 0)
    return distance, strong


def selection_code(select, attrs, ordered, x64, index):
    """``index`` (an index output) as the codes of what it selects from ``x64``."""
    values, valid = select(x64, index.cpu().long(), attrs)
    return selection_codes(x64, values, index, valid, ordered)


def judge_selection(select, attrs, ordered, working, x64, x_eager, eager, compiled, ref,
                    floor=0.0):
    """An index output judged by what it selects (numfuzz and a repro alike): ``select`` the
    op's selector (``OpSpec.selects``), ``x64``/``x_eager`` float64's and eager's values of the
    op's input (``x_eager`` None where unknown). Returns eager's, compiled's and float64's codes
    (``selection_codes``), then per element the distance of compiled's pick from float64's in
    ulps, eager's noise there, and whether that is strong evidence (``selection_evidence``; an
    index out of range always is; nothing is where eager's noise is unknown). Eager's noise is
    at least ``floor`` ulps of a float input."""
    def codes(index):
        return selection_code(select, attrs, ordered, x64, index)

    best, _ = select(x64, ref.cpu().long(), attrs)
    chosen, valid = select(x64, compiled.cpu().long(), attrs)
    if x_eager is not None and tuple(x_eager.shape) == tuple(x64.shape):
        own, typical = selection_noise(x64, x_eager, working)
        least = max(typical, floor if working.is_floating_point else 0.0)
        noise = torch.maximum(select(own, ref.cpu().long(), attrs)[0],
                              select(own, compiled.cpu().long(), attrs)[0]).clamp(min=least)
        distance, strong = selection_evidence(best, chosen, noise, working, ordered)
    else:
        noise = torch.full(best.shape, float("nan"), dtype=torch.float64)
        distance, _ = selection_evidence(best, chosen, noise, working)
        strong = torch.zeros(best.shape, dtype=torch.bool)
    return codes(eager), codes(compiled), codes(ref), distance, noise, strong | ~valid


def zero_sign_regressions(eager, compiled, ref, defined=True):
    """Zeros whose sign compiled gets wrong: eager and float64 exact zeros of one sign (float64
    exactly zero: no rounding put it there), compiled the zero of the other sign. Only where
    the program defines that sign (``defined``: every op the value flows through defines a
    zero's sign, as IEEE and eager do for ``minimum``, ``neg``, ``copysign``, a product); an
    op that may return either zero (a maximum among equal values) leaves it undefined, and no
    such flip is a finding. ``defined`` is True, False, or per element (a bool tensor): a
    ``copysign`` takes its sign from a NaN that arithmetic made, whose sign IEEE leaves
    unspecified, only there."""
    zeros = (eager == 0) & (compiled == 0) & (ref == 0)
    flipped = zeros & (torch.signbit(eager) == torch.signbit(ref)) & \
        (torch.signbit(compiled) != torch.signbit(eager))
    if isinstance(defined, torch.Tensor):
        return flipped & defined.to(flipped.device)
    return flipped if defined else torch.zeros_like(flipped)


def nonfinite_in_compiled(eager, compiled, ref):
    """inf/NaN in compiled where eager and float64 are finite."""
    return torch.isfinite(eager) & torch.isfinite(ref) & ~torch.isfinite(compiled)


def nonfinite_hidden(eager, compiled, ref):
    """Compiled finite where eager and float64 are both non-finite."""
    return ~torch.isfinite(eager) & ~torch.isfinite(ref) & torch.isfinite(compiled)


def nonfinite_benign(eager, compiled, ref):
    """Compiled closer than eager: eager overflowed where float64 and compiled are finite, or
    compiled is the very non-finite value float64 has and eager is not (a finite value, or
    another non-finite one: eager's -inf where float64 and compiled give +inf)."""
    c_fin, r_fin = torch.isfinite(compiled), torch.isfinite(ref)

    def as_ref(t):
        return (torch.isnan(t) & torch.isnan(ref)) | (~torch.isfinite(t) & (t == ref))

    return (~torch.isfinite(eager) & r_fin & c_fin) | (~c_fin & as_ref(compiled) & ~as_ref(eager))


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
                parity=False, stable=None, signs=False):
    """One output's kind: the most severe rule that fires, else ``benign`` or ``ok``.

    ``strong``: per element, whether float64 sits far enough from the head's discontinuity
    (``evidence``); None when the head is unknown. ``stable``: per element, whether float64's
    code survives input noise (``stable_codes``); None when not measured. ``parity`` (the
    eager-parity policy): a discrete mismatch that is not a strong regression is ``parity``
    instead of ``weak-flip`` or ``benign``. ``signs``: the program defines the sign of this
    float output's zeros (``zero_sign_regressions``)."""
    if compiled.shape != eager.shape or compiled.dtype != eager.dtype:
        return "meta"
    compiled = compiled.to(eager.device)
    if not eager.is_floating_point():
        regress = discrete_regressions(eager, compiled, ref, undefined, ordinal)
        if bool(strong_regressions(eager, compiled, ref, regress, strong, ordinal,
                                   stable).any()):
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
    if bool(zero_sign_regressions(eager, compiled, ref, signs).any()):
        return "signed-zero"
    return "benign" if bool(benign.any()) else "ok"


def showing(kind, eager, compiled, ref, undefined=None, ordinal=True, signs=False):
    """The elements of one output that show ``kind`` (``output_kind``'s answer): the one
    definition the worker's verdict (``oracle``) and every ``repro.py`` list them by. Regressing
    codes for a flip, every mismatch under the parity policy, the non-finite values only one
    side has, the zeros of the wrong sign; any other kind, the elements that differ."""
    if kind in ("int-flip", "weak-flip"):
        return discrete_regressions(eager, compiled, ref, undefined, ordinal)
    if kind == "parity":
        return discrete_mismatches(eager, compiled, undefined)
    if kind == "signed-zero":
        return zero_sign_regressions(eager, compiled, ref, signs)
    masks = {"nonfinite": nonfinite_in_compiled, "hidden-nonfinite": nonfinite_hidden,
             "benign": nonfinite_benign}
    if kind in masks and eager.is_floating_point():
        return masks[kind](eager, compiled, ref)
    return eager != compiled


def embedded_source() -> str:
    """This module's rules as source text, for a repro to carry (everything after the imports)."""
    import inspect
    import sys

    text = inspect.getsource(sys.modules[__name__])
    body = text.split("\nimport torch\n", 1)[1]
    return body.split("\ndef embedded_source", 1)[0].strip() + "\n"

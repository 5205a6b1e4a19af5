"""The oracle: one verdict per output, classified by what a PyTorch maintainer would call a bug.

Which rule fires is decided by ``rules`` (the same functions ``repro.py`` embeds; its docstring
states the rules and the evidence margins); this module adds the details a person reads and
ranks the outputs. Findings (``SEVERITY``) are regressions by PyTorch's own rule, compiled worse
than eager against float64: ``nonfinite``, strong ``int-flip``, ``hidden-nonfinite``, ``meta``,
``crash``, ``timeout``, ``worker-kill`` (a case that twice killed the Ray actor running it),
``accuracy``. Not findings, but counted: ``weak-flip`` (a regression within eager's own rounding
noise) and ``benign`` (compiled differs, and is at least as close).
Under the eager-parity policy (``POLICIES``; for users whose spec is eager's rounding) those two
become ``parity`` findings, each element still classed as regressing or benign.
Run to run: eager and compiled each run twice; an element where either side's two runs differ
(``run_to_run``, ``either``) is given eager's value on the compiled side before judging
(``steadied``) and counted on its output (``unstable``), so a difference that also appears
between two runs of one side is never part of a finding.
The verdict types themselves live in ``verdict`` (torch-free, so the store, triage's
ranking and the nightly read case verdicts without torch).
Judging is on the host: each output's values are brought to the CPU (``judge_output``), where the
masks that say which elements count (heads, undefined, stable, zero signs) are made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch

from fuzzer.judge import rules
from fuzzer.judge.details import Agrees, Details, Distance, Element
from fuzzer.judge.kinds import RANK, Kind
from fuzzer.judge.verdict import OutputVerdict, Verdict

TOLERANCE = {"float32": 1e-4, "float64": 1e-7, "bfloat16": 1e-2, "float16": 1e-2}
MAX_ELEMENTS = 8  # differing elements recorded per output


def bitwise_equal(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    """Equal including NaN positions: how a deterministic eager must repeat itself."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.is_floating_point():
            nan_x, nan_y = torch.isnan(x), torch.isnan(y)
            if not (torch.equal(nan_x, nan_y) and torch.equal(x[~nan_x], y[~nan_y])):
                return False
        elif not torch.equal(x, y):
            return False
    return True


# ------------------------------------------------------------------ run to run


def run_to_run(first: list[torch.Tensor], second: list[torch.Tensor]
               ) -> list[torch.Tensor | None]:
    """Per output, the elements where two runs of one side differ (NaN equals NaN), or None
    where they agree bit for bit. ValueError when the runs differ in number, shape or dtype:
    then no element can be matched to its twin."""
    if len(first) != len(second):
        raise ValueError("the runs gave different numbers of outputs")
    masks: list[torch.Tensor | None] = []
    for x, y in zip(first, second):
        if x.shape != y.shape or x.dtype != y.dtype:
            raise ValueError("the runs gave outputs of different shapes or dtypes")
        differ = x != y
        if x.is_floating_point():
            differ &= ~(torch.isnan(x) & torch.isnan(y))
        masks.append(differ if bool(differ.any()) else None)
    return masks


def either(eager: list[torch.Tensor | None], compiled: list[torch.Tensor | None]
           ) -> list[torch.Tensor | None]:
    """Per compiled output, the elements that vary run to run on either side (``run_to_run``);
    eager's masks count only where the output has eager's shape."""
    joined: list[torch.Tensor | None] = []
    for i, c in enumerate(compiled):
        e = eager[i] if i < len(eager) else None
        if e is None or (c is not None and e.shape != c.shape):
            joined.append(c)
        else:
            joined.append(e if c is None else e | c.to(e.device))
    return joined


def steadied(eager: list[torch.Tensor], compiled: list[torch.Tensor],
             unstable: list[torch.Tensor | None]) -> list[torch.Tensor]:
    """Compiled's outputs with every element that varies run to run (``either``) set to eager's:
    a difference that also appears between two runs of one side is never part of a finding. An
    output whose shape or dtype is not eager's is left as it is (a ``meta`` finding)."""
    result = []
    for i, c in enumerate(compiled):
        mask = unstable[i] if i < len(unstable) else None
        e = eager[i] if i < len(eager) else None
        if mask is None or e is None or e.shape != c.shape or e.dtype != c.dtype:
            result.append(c)
        else:
            result.append(torch.where(mask.to(c.device), e.to(c.device), c))
    return result


def note_eager_reference(verdict: Verdict, why: str) -> None:
    """Say on each output that eager's values were its reference, and why (no float64 run):
    how often float64 sided with either side was then not measured, and is not recorded."""
    for out in verdict.outputs:
        out.details.judged_by = f"eager's values as the reference: {why}"
        out.details.reference = "eager"
        out.details.fp64_agrees = None


def note_unstable(verdict: Verdict, unstable: list[torch.Tensor | None]) -> None:
    """Record on each output how many of its elements varied run to run (left out of judging)."""
    for out in verdict.outputs:
        mask = unstable[out.output] if out.output < len(unstable) else None
        if mask is not None:
            out.details.unstable = int(mask.sum())


def _index(flat: int, shape: torch.Size) -> list[int]:
    return [int(i) for i in torch.unravel_index(torch.tensor(flat), shape)]


def _scalar(t: torch.Tensor) -> bool | int | float:
    value = t.item()
    return value if isinstance(value, (bool, int)) else float(value)


@dataclass
class Head:
    """What the graph says about one discrete output's elements: float64's value at the head's
    input, its distance from the discontinuity and the noise eager makes there in ulps of the
    working dtype, and whether that distance is strong evidence (``rules.evidence``)."""

    x: torch.Tensor
    ulps: torch.Tensor
    eager_ulps: torch.Tensor  # eager's noise at the head's input (rules.evidence), same ulps
    strong: torch.Tensor


def judge_discrete(eager: torch.Tensor, compiled: torch.Tensor, ref: torch.Tensor,
                   head: Head | None, undefined: torch.Tensor | None = None,
                   ordinal: bool = True, parity: bool = False,
                   stable: torch.Tensor | None = None) -> tuple[str, Details]:
    """int-flip, weak-flip, benign, parity or ok by ``rules``; the differing elements for the
    record, regressing ones first. Elements in ``undefined`` are not compared; ``stable``
    (``rules.stable_codes``) says where float64's code survives input noise."""
    strong = head.strong if head is not None else None
    kind = rules.output_kind(eager, compiled, ref, 0.0, undefined, ordinal, strong, parity,
                             stable)
    differ = rules.discrete_mismatches(eager, compiled, undefined)
    count = int(differ.sum())
    if count == 0:
        skipped = int((undefined & (eager != compiled)).sum()) if undefined is not None else 0
        return kind, Details(reason=f"{skipped} differ only where the value is undefined") \
            if skipped else Details()
    regress = rules.discrete_regressions(eager, compiled, ref, undefined, ordinal)
    kept = rules.strong_regressions(eager, compiled, ref, regress, strong, ordinal, stable)
    order = torch.argsort((~regress).reshape(-1).int() * 2 + (~kept).reshape(-1).int(),
                          stable=True)
    flat = order[differ.reshape(-1)[order]]
    e, c, r = (t.reshape(-1)[flat] for t in (eager, compiled, ref.to(eager.dtype)))
    details = Details(
        count=count,
        total=eager.numel(),
        regressing=int(regress.sum()),
        benign=count - int(regress.sum()),
        strong=int(kept.sum()),
        max_abs_diff=int((e.long() - c.long()).abs().max()),
        fp64_agrees=Agrees(eager=int((r == e).sum()), compiled=int((r == c).sum()),
                           neither=int(((r != e) & (r != c)).sum())),
        evidence="strong" if kind == "int-flip" else "weak" if bool(regress.any()) else "none",
    )
    if stable is not None:  # regressing elements whose float64 code moved under input noise
        details.chaotic = int((regress & ~stable.to(regress.device)).sum())
    u = head.ulps.reshape(-1)[flat] if head is not None else None
    if u is not None:
        details.min_ulps = _ulps_value(u.min())
        details.max_ulps = _ulps_value(u.max())
    for j in range(min(len(flat), MAX_ELEMENTS)):
        i = int(flat[j])
        element = Element(_index(i, eager.shape), _scalar(e[j]), _scalar(c[j]), _scalar(r[j]),
                          regresses=bool(regress.reshape(-1)[i]),
                          strong=bool(kept.reshape(-1)[i]))
        if stable is not None:
            element.stable = bool(stable.reshape(-1)[i])
        if head is not None and u is not None:  # (u is the head's: both or neither)
            element.distance = Distance(_ulps_value(u[j]),
                                        _ulps_value(head.eager_ulps.reshape(-1)[i]),
                                        _float_value(head.x.reshape(-1)[i]))
        details.elements.append(element)
    if kind == "benign":
        details.reason = "compiled is at least as close to float64 as eager on every element"
    return kind, details


def _ulps_value(u: torch.Tensor) -> float | None:
    """A distance for the record; None when float64 itself was not finite (strict JSON has no NaN).
    """
    value = float(u)
    return round(value, 3) if math.isfinite(value) else None


def _float_value(x: torch.Tensor) -> float | None:
    value = float(x)
    return value if math.isfinite(value) else None


def judge_float(eager: torch.Tensor, compiled: torch.Tensor, ref: torch.Tensor,
                dtype: str, signs: bool | torch.Tensor = False) -> tuple[str, Details]:
    """nonfinite, hidden-nonfinite, accuracy, signed-zero (``signs``: where the program defines
    the sign of this output's zeros, everywhere or per element), benign or ok by ``rules``; the
    elements for the record."""
    tol = TOLERANCE.get(dtype, 1e-4)
    kind = rules.output_kind(eager, compiled, ref, tol, signs=signs)
    if kind in ("nonfinite", "hidden-nonfinite", "benign", "signed-zero"):
        mask = rules.showing(kind, eager, compiled, ref, signs=signs)
        flat = mask.reshape(-1).nonzero().reshape(-1)[:MAX_ELEMENTS]
        elements = [Element(_index(int(i), eager.shape), float(eager.reshape(-1)[i]),
                            float(compiled.reshape(-1)[i]), float(ref.reshape(-1)[i]))
                    for i in flat]
        return kind, Details(count=int(mask.sum()), total=eager.numel(), elements=elements)
    if kind == "ok":
        return "ok", Details()
    both = torch.isfinite(eager) & torch.isfinite(compiled) & torch.isfinite(ref)
    e, c, r = eager[both].double(), compiled[both].double(), ref[both]
    rmse = lambda a, b: float(torch.sqrt(torch.mean((a - b) ** 2))) if a.numel() else 0.0  # noqa: E731
    return "accuracy", Details(
        reason=f"fails torch._dynamo.utils.same(tol={tol}) against the float64 reference",
        max_abs_diff=float((e - c).abs().max()) if e.numel() else 0.0,
        rmse_eager=rmse(e, r), rmse_compiled=rmse(c, r),
    )


def judge(eager: list[torch.Tensor], compiled: list[torch.Tensor], ref: list[torch.Tensor],
          heads: list[Head | None], nodes: list[int],
          undefined: list[torch.Tensor | None] | None = None,
          ordinal: list[bool] | None = None, policy: str = "float64",
          stable: list[torch.Tensor | None] | None = None,
          signs: list[bool | torch.Tensor] | None = None) -> Verdict:
    """Classify each output; the case verdict is the most severe one (a finding if any).
    ``policy`` is one of ``POLICIES``; ``stable`` per output as ``judge_discrete`` takes it,
    ``signs`` as ``judge_float`` does."""
    if len(compiled) != len(eager):
        return Verdict(Kind.META, message=f"compiled returned {len(compiled)} outputs, "
                                       f"eager {len(eager)}")
    outputs, scores = [], []
    undefined = undefined or [None] * len(eager)
    ordinal = ordinal or [True] * len(eager)
    stable = stable or [None] * len(eager)
    signs = signs or [False] * len(eager)
    for i, (e, c, r, head, node) in enumerate(zip(eager, compiled, ref, heads, nodes)):
        out, score = judge_output(i, node, e, c, r, head, undefined[i], ordinal[i],
                                  policy == "parity", stable[i], signs[i])
        outputs.append(out)
        scores.append(score)
    return _ranked(outputs, scores)


def judge_output(i: int, node: int, e: torch.Tensor, c: torch.Tensor, r: torch.Tensor,
                 head: Head | None = None, undefined: torch.Tensor | None = None,
                 ordinal: bool = True, parity: bool = False,
                 stable: torch.Tensor | None = None,
                 signs: bool | torch.Tensor = False) -> tuple[OutputVerdict, float]:
    """One output's verdict (output ``i``, read from ``node``) and its ``regression_score``."""
    dtype = str(e.dtype).removeprefix("torch.")
    if c.shape != e.shape or c.dtype != e.dtype:
        return OutputVerdict(i, node, Kind.META, dtype, Details(
            reason=f"compiled gave {tuple(c.shape)} {c.dtype}, eager {tuple(e.shape)} "
                   f"{e.dtype}")), 0.0
    # on a GPU the runs' values are the device's and the masks the host's (module docstring)
    e, c, r = e.cpu(), c.cpu(), r.cpu()
    undefined, stable = (t.cpu() if isinstance(t, torch.Tensor) else t for t in (undefined, stable))
    signs = signs.cpu() if isinstance(signs, torch.Tensor) else signs
    if head is not None:
        head = Head(*(getattr(head, f.name).cpu() for f in fields(Head)))
    if e.is_floating_point():
        kind, details = judge_float(e, c, r, dtype, signs)
    else:
        kind, details = judge_discrete(e, c, r, head, undefined, ordinal, parity, stable)
    return OutputVerdict(i, node, Kind(kind), dtype, details), \
        regression_score(e, c, r, dtype, undefined, ordinal)


def with_gradients(verdict: Verdict, eager: list[torch.Tensor], compiled: list[torch.Tensor],
                   ref: list[torch.Tensor], inputs: list[int]) -> Verdict:
    """``verdict`` with a training run's gradients judged as further outputs (float tensors:
    the float rules); ``inputs`` names the input node of each gradient
    (``details.gradient_of``)."""
    if not verdict.outputs:
        return verdict  # eager and compiled disagree on the outputs' number: nothing to add to
    outputs, scores = list(verdict.outputs), [verdict.score]
    for e, c, r, node in zip(eager, compiled, ref, inputs):
        out, score = judge_output(len(outputs), node, e, c, r)
        out.details.gradient_of = node
        outputs.append(out)
        scores.append(score)
    return _ranked(outputs, scores)


def with_aliasing(verdict: Verdict, problems: list[tuple[int, str, Details]]) -> Verdict:
    """``verdict`` with what the call did to storage judged too: each problem (an output whose
    storage sharing with the inputs differs from eager's, an input compiled changed that the
    program never writes) is one more output verdict of kind ``aliasing``, ranked with the
    rest. ``problems`` are (node, dtype, details)."""
    if not problems or not verdict.outputs:
        return verdict
    outputs, scores = list(verdict.outputs), [verdict.score]
    for node, dtype, details in problems:
        outputs.append(OutputVerdict(len(outputs), node, Kind.ALIASING, dtype, details))
        scores.append(SCORE_CAP)
    return _ranked(outputs, scores)


def _ranked(outputs: list[OutputVerdict], scores: list[float]) -> Verdict:
    """The case's verdict: its most severe output's kind, or ok; its score the worst one's."""
    ranked = [o for o in outputs if o.kind in RANK]
    score = max(scores, default=0.0)
    if not ranked:
        return Verdict(Kind.OK, outputs=outputs, score=score)
    worst = min(ranked, key=lambda o: RANK.index(o.kind))
    return Verdict(worst.kind, worst.output, worst.node, outputs, score=score)


SCORE_CAP = 1e6  # a non-finite value compiled made up: worse than any rounding


def regression_score(eager: torch.Tensor, compiled: torch.Tensor, ref: torch.Tensor, dtype: str,
                     undefined: torch.Tensor | None = None, ordinal: bool = True) -> float:
    """How much worse compiled is than eager against float64 on one output, in the terms of the
    rule that judges it: at 1 or more that rule fires, so a case just under 1 is a near miss
    worth mutating (``--search guided``).

    Floats, on the elements all three have finite: ``torch._dynamo.utils.same`` fails when
    compiled is not allclose to eager (atol = rtol = tol) and compiled's RMSE against float64
    exceeds ``2 * eager's + tol / 10``; the score is the smaller of the two ratios, largest
    ``|compiled - eager| / (tol + tol * |compiled|)`` and ``RMSE_compiled / (2 * RMSE_eager +
    tol / 10)``. ``SCORE_CAP`` where compiled is non-finite and eager and float64 are not.
    Discrete codes: 1 plus the share of elements that regress (compiled's code further from
    float64's than eager's), 0 when none does."""
    if not eager.is_floating_point():
        regress = rules.discrete_regressions(eager, compiled, ref, undefined, ordinal)
        return 1.0 + float(regress.float().mean()) if bool(regress.any()) else 0.0
    if bool(rules.nonfinite_in_compiled(eager, compiled, ref).any()):
        return SCORE_CAP
    both = torch.isfinite(eager) & torch.isfinite(compiled) & torch.isfinite(ref)
    if not bool(both.any()):
        return 0.0
    tol = TOLERANCE.get(dtype, 1e-4)
    e, c, r = eager[both].double(), compiled[both].double(), ref[both].double()
    apart = float(((c - e).abs() / (tol + tol * c.abs())).max())
    rmse = lambda x: float(torch.sqrt(torch.mean((x - r) ** 2)))  # noqa: E731
    return min(SCORE_CAP, apart, rmse(c) / (2.0 * rmse(e) + tol / 10))

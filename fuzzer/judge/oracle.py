"""The oracle: one verdict per output, classified by what a PyTorch maintainer would call a bug.

Which rule fires is decided by ``rules`` (the same functions ``repro.py`` embeds); this module
adds the details a person reads. Float outputs are judged by PyTorch's own rule
(``torch._dynamo.utils.same`` with the float64 reference: a compiled result closer to float64 than
eager's is fine). That rule hides what this
fuzzer hunts, so two kinds come first: ``nonfinite`` (inf/NaN only in compiled) and ``int-flip``
(a discrete output that differs), the latter with how far float64 sits from the discontinuity.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from fuzzer.judge import rules

# Most severe first. Everything here is a finding; "ok" and "skip" are not.
SEVERITY = ("nonfinite", "int-flip", "crash", "timeout", "accuracy", "eager-nonfinite")
NOT_FINDINGS = ("ok", "skip")
TOLERANCE = {"float32": 1e-4, "float64": 1e-7, "bfloat16": 1e-2, "float16": 1e-2}
MAX_ELEMENTS = 8  # differing elements recorded per output
# A flip is strong evidence when float64 sides with eager on an element at least this many ulps
# (of the working dtype) from the discontinuity, or when the discrete values differ by more than
# one step, which no single boundary crossing explains. Anything else may be rounding noise.
STRONG_ULPS = 4.0


@dataclass
class OutputVerdict:
    """What one output did. ``node`` is the graph node it reads, which survives minimization."""

    output: int
    node: int
    kind: str
    dtype: str
    details: dict = field(default_factory=dict)


@dataclass
class Verdict:
    """A case's verdict: the most severe output verdict, plus all of them."""

    kind: str
    output: int | None = None
    node: int | None = None
    outputs: list[OutputVerdict] = field(default_factory=list)
    draw: int | None = None
    magnitude: str | None = None
    message: str = ""

    @property
    def is_finding(self) -> bool:
        return self.kind in SEVERITY

    @property
    def diverging(self) -> OutputVerdict | None:
        """The record of the output the verdict names, if it has one."""
        if self.output is None or not 0 <= self.output < len(self.outputs):
            return None
        return self.outputs[self.output]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Verdict:
        """Rebuild a verdict; TypeError or ValueError on anything not shaped like one (a case
        file is data from anywhere: its verdict is checked like every other field)."""
        if not isinstance(data, dict):
            raise TypeError("a verdict must be a dict")
        outputs = [OutputVerdict(**_checked_output(o)) for o in data.get("outputs", [])]
        verdict = cls(**{**data, "outputs": outputs})
        _check_kind(verdict.kind)
        for name in ("output", "node", "draw"):
            if not isinstance(getattr(verdict, name), (int, type(None))):
                raise TypeError(f"verdict {name} must be an integer")
        if not isinstance(verdict.message, str) or \
                not isinstance(verdict.magnitude, (str, type(None))):
            raise TypeError("verdict message and magnitude must be text")
        return verdict

    def summary(self) -> str:
        if self.kind in ("crash", "timeout", "skip"):
            return f"{self.kind}: {self.message}"
        if self.output is None:
            return self.kind
        out = self.diverging
        if out is None:
            return f"{self.kind} in output {self.output}"
        try:
            return self._details_summary(out)
        except (KeyError, TypeError):  # details from a file that does not hold them all
            return f"{self.kind} in output {self.output} ({out.dtype})"

    def _details_summary(self, out: OutputVerdict) -> str:
        d = out.details
        if self.kind == "int-flip":
            return (f"int-flip ({d.get('evidence', '?')} evidence) in output {self.output} "
                    f"({out.dtype}): {d['count']}/{d['total']} "
                    f"elements differ, max |diff| {d['max_abs_diff']}, "
                    f"float64 sides with eager on {d['fp64_agrees']['eager']}, with compiled on "
                    f"{d['fp64_agrees']['compiled']}" + _distance(d))
        if self.kind in ("nonfinite", "eager-nonfinite"):
            return f"{self.kind} in output {self.output} ({out.dtype}): {d['count']} elements"
        return f"{self.kind} in output {self.output} ({out.dtype}): {d.get('reason', '')}"


def _check_kind(kind: Any) -> None:
    if kind not in SEVERITY + NOT_FINDINGS:
        raise ValueError(f"unknown verdict kind {str(kind)[:40]!r}")


def _checked_output(data: Any) -> dict:
    if not isinstance(data, dict):
        raise TypeError("an output verdict must be a dict")
    _check_kind(data.get("kind"))
    if not isinstance(data.get("output"), int) or not isinstance(data.get("node"), int) \
            or not isinstance(data.get("dtype"), str) \
            or not isinstance(data.get("details", {}), dict):
        raise TypeError("malformed output verdict")
    return data


def _distance(details: dict) -> str:
    if details.get("max_ulps") is None:
        return ""
    return f"; {details['min_ulps']}..{details['max_ulps']} ulps from the boundary"


def most_severe(verdicts: list[Verdict]) -> Verdict:
    def rank(v: Verdict) -> int:
        return SEVERITY.index(v.kind) if v.kind in SEVERITY else len(SEVERITY) + (v.kind == "skip")

    return min(verdicts, key=rank)


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


def _index(flat: int, shape: torch.Size) -> list[int]:
    return [int(i) for i in torch.unravel_index(torch.tensor(flat), shape)]


def _scalar(t: torch.Tensor) -> Any:
    value = t.item()
    return value if isinstance(value, (bool, int)) else float(value)


def judge_discrete(eager: torch.Tensor, compiled: torch.Tensor, ref: torch.Tensor,
                   ulps: torch.Tensor | None,
                   undefined: torch.Tensor | None = None) -> tuple[str, dict]:
    """int-flip unless equal, or unless float64 sides with compiled on every differing element.

    Elements in ``undefined`` (a NaN converted to an integer: C++ leaves the result undefined,
    so eager and compiled may both be right) are not compared.
    """
    differ = eager != compiled
    if undefined is not None:
        differ &= ~undefined
    regressed = rules.discrete_flips(eager, compiled, ref, undefined)
    count = int(differ.sum())
    if count == 0:
        skipped = int((undefined & (eager != compiled)).sum()) if undefined is not None else 0
        return "ok", {"reason": f"{skipped} differ only where the value is undefined"} \
            if skipped else {}
    flat = differ.reshape(-1).nonzero().reshape(-1)
    e, c, r = (t.reshape(-1)[flat] for t in (eager, compiled, ref.to(eager.dtype)))
    agrees = {"eager": int((r == e).sum()), "compiled": int((r == c).sum()),
              "neither": int(((r != e) & (r != c)).sum())}
    details: dict[str, Any] = {
        "count": count,
        "total": eager.numel(),
        "max_abs_diff": int((e.long() - c.long()).abs().max()),
        "fp64_agrees": agrees,
    }
    u = ulps.reshape(-1)[flat].double() if ulps is not None else None
    if u is not None:
        details["min_ulps"] = _ulps_value(u.min())
        details["max_ulps"] = _ulps_value(u.max())
    details["evidence"] = _evidence(e, c, r, u, details["max_abs_diff"])
    elements = []
    for j in range(min(len(flat), MAX_ELEMENTS)):
        elements.append({
            "index": _index(int(flat[j]), eager.shape),
            "eager": _scalar(e[j]), "compiled": _scalar(c[j]), "fp64": _scalar(r[j]),
            "ulps": None if u is None else _ulps_value(u[j]),
        })
    details["elements"] = elements
    if not bool(regressed.any()):
        details["reason"] = "compiled matches float64 on every differing element"
        return "ok", details
    return "int-flip", details


def _ulps_value(u: torch.Tensor) -> float | None:
    """A distance for the record; None when float64 itself was not finite (strict JSON has no NaN).
    """
    value = float(u)
    return round(value, 3) if math.isfinite(value) else None


def _evidence(e: torch.Tensor, c: torch.Tensor, r: torch.Tensor, u: torch.Tensor | None,
              max_abs_diff: int) -> str:
    """'strong' or 'weak': how much a person should trust this flip (see STRONG_ULPS)."""
    if max_abs_diff > 1 and e.dtype != torch.bool:
        return "strong"
    eager_side = (r == e) & (r != c)
    far = eager_side if u is None else eager_side & (u >= STRONG_ULPS)
    return "strong" if bool(far.any()) else "weak"


def judge_float(eager: torch.Tensor, compiled: torch.Tensor, ref: torch.Tensor,
                dtype: str) -> tuple[str, dict]:
    for kind, mask in (("nonfinite", rules.nonfinite_in_compiled(eager, compiled, ref)),
                       ("eager-nonfinite", rules.nonfinite_in_eager(eager, compiled, ref))):
        count = int(mask.sum())
        if count:
            flat = mask.reshape(-1).nonzero().reshape(-1)[:MAX_ELEMENTS]
            elements = [{"index": _index(int(i), eager.shape),
                         "eager": float(eager.reshape(-1)[i]),
                         "compiled": float(compiled.reshape(-1)[i]),
                         "fp64": float(ref.reshape(-1)[i])} for i in flat]
            return kind, {"count": count, "total": eager.numel(), "elements": elements}
    tol = TOLERANCE.get(dtype, 1e-4)
    if not rules.fails_same(eager, compiled, ref, tol):
        return "ok", {}
    both = torch.isfinite(eager) & torch.isfinite(compiled) & torch.isfinite(ref)
    e, c, r = eager[both].double(), compiled[both].double(), ref[both]
    rmse = lambda a, b: float(torch.sqrt(torch.mean((a - b) ** 2))) if a.numel() else 0.0  # noqa: E731
    return "accuracy", {
        "reason": f"fails torch._dynamo.utils.same(tol={tol}) against the float64 reference",
        "max_abs_diff": float((e - c).abs().max()) if e.numel() else 0.0,
        "rmse_eager": rmse(e, r), "rmse_compiled": rmse(c, r),
    }


def judge(eager: list[torch.Tensor], compiled: list[torch.Tensor], ref: list[torch.Tensor],
          ulps: list[torch.Tensor | None], nodes: list[int],
          undefined: list[torch.Tensor | None] | None = None) -> Verdict:
    """Classify each output; the case verdict is the most severe one."""
    if len(compiled) != len(eager):
        return Verdict("crash", message=f"compiled returned {len(compiled)} outputs, "
                                        f"eager {len(eager)}")
    outputs = []
    undefined = undefined or [None] * len(eager)
    for i, (e, c, r, u, node) in enumerate(zip(eager, compiled, ref, ulps, nodes)):
        dtype = str(e.dtype).removeprefix("torch.")
        if c.shape != e.shape or c.dtype != e.dtype:
            outputs.append(OutputVerdict(i, node, "crash", dtype, {
                "reason": f"compiled gave {tuple(c.shape)} {c.dtype}, eager {tuple(e.shape)} "
                          f"{e.dtype}"}))
            continue
        c = c.to(e.device)
        if e.is_floating_point():
            kind, details = judge_float(e, c, r, dtype)
        else:
            kind, details = judge_discrete(e, c, r, u, undefined[i])
        outputs.append(OutputVerdict(i, node, kind, dtype, details))
    findings = [o for o in outputs if o.kind in SEVERITY]
    if not findings:
        return Verdict("ok", outputs=outputs)
    worst = min(findings, key=lambda o: SEVERITY.index(o.kind))
    return Verdict(worst.kind, worst.output, worst.node, outputs)

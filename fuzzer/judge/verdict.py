"""Verdicts as data: what one case did (``Verdict``) and each output (``OutputVerdict``).

Torch-free on purpose: case files, the findings store, triage's ranking and the nightly read
verdicts without importing torch. ``oracle`` makes them; this module only holds, checks,
serializes and summarizes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from fuzzer.judge.details import Agrees, Details, given
from fuzzer.judge.kinds import FLIPS, RAISED, RANK, SEVERITY, Kind, memory_class


@dataclass
class OutputVerdict:
    """What one output did. ``node`` is the graph node it reads, which survives minimization;
    ``details`` what the judge recorded (plain data is read by ``Details.from_dict``, checked)."""

    output: int
    node: int
    kind: Kind
    dtype: str
    details: Details = field(default_factory=Details)

    def __post_init__(self) -> None:
        self.kind = Kind(self.kind)  # ValueError on a kind numfuzz does not know
        if isinstance(self.details, dict):
            self.details = Details.from_dict(self.details)
        elif not isinstance(self.details, Details):
            raise TypeError("malformed output verdict: details must be a dict")

    def to_dict(self) -> dict:
        return {"output": self.output, "node": self.node, "kind": str(self.kind),
                "dtype": self.dtype, "details": self.details.to_dict()}


@dataclass
class Verdict:
    """A case's verdict: the most severe output verdict, plus all of them."""

    kind: Kind
    output: int | None = None
    node: int | None = None
    outputs: list[OutputVerdict] = field(default_factory=list)
    draw: int | None = None
    magnitude: str | None = None
    message: str = ""
    frames: list[str] = field(default_factory=list)  # a crash: where in torch (rules.torch_frames)
    score: float = 0.0  # regression_score, the worst output's: what guided search climbs
    sdpa: list[str] = field(default_factory=list)  # the attention backends eager ran (flags)
    # Graph values Inductor's freezing made constants (frozen parameters, values folded from
    # them) while compiling this case; None where not measured (no freezing, or this torch).
    frozen: int | None = None

    def __post_init__(self) -> None:
        self.kind = Kind(self.kind)  # ValueError on a kind numfuzz does not know
        if self.kind == Kind.CRASH and memory_class(self.message):  # recorded before numfuzz
            self.kind = Kind.MEMORY  # told memory-unsafe crashes apart: the same bug

    @property
    def is_finding(self) -> bool:
        return self.kind in SEVERITY

    @property
    def evidence(self) -> str:
        """strong, weak or none for a discrete flip (``rules``); empty for other kinds."""
        out = self.diverging
        return given(out.details.evidence, "") if out is not None else ""

    @property
    def diverging(self) -> OutputVerdict | None:
        """The record of the output the verdict names, if it has one."""
        if self.output is None or not 0 <= self.output < len(self.outputs):
            return None
        return self.outputs[self.output]

    def to_dict(self) -> dict:
        """Plain data (kinds as their strings, details as ``Details.to_dict``): what case files,
        pipes and JSON carry."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**data, "kind": str(self.kind), "outputs": [o.to_dict() for o in self.outputs],
                "frames": list(self.frames), "sdpa": list(self.sdpa)}

    @classmethod
    def from_dict(cls, data: dict) -> Verdict:
        """Rebuild a verdict; TypeError or ValueError on anything not shaped like one (a case
        file is data from anywhere: its verdict is checked like every other field)."""
        if not isinstance(data, dict):
            raise TypeError("a verdict must be a dict")
        outputs = [OutputVerdict(**_checked_output(o)) for o in data.get("outputs", [])]
        verdict = cls(**{**data, "outputs": outputs})
        if not isinstance(verdict.score, (int, float)):
            raise TypeError("verdict score must be a number")
        for name in ("output", "node", "draw", "frozen"):
            if not isinstance(getattr(verdict, name), (int, type(None))):
                raise TypeError(f"verdict {name} must be an integer")
        for name in ("frames", "sdpa"):
            value = getattr(verdict, name)
            if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
                raise TypeError(f"verdict {name} must be a list of text")
        if not isinstance(verdict.message, str) or \
                not isinstance(verdict.magnitude, (str, type(None))):
            raise TypeError("verdict message and magnitude must be text")
        return verdict

    def summary(self) -> str:
        if self.kind in (*RAISED, Kind.WORKER_KILL, Kind.SKIP, Kind.EXPECTED):
            return f"{self.kind}: {self.message}"  # expected: the divergence, and what undid it
        if self.output is None:
            return self.kind
        out = self.diverging
        if out is None:
            return f"{self.kind} in output {self.output}"
        text = self._details_summary(out)
        if text is None:  # details from a file that does not hold them all
            text = f"{self.kind} in {self.place} ({out.dtype})"
        judged_by = out.details.judged_by
        return f"{text} [judged by {judged_by}]" if judged_by is not None else text

    @property
    def place(self) -> str:
        """Where it diverged: ``output 2``, ``the gradient of input node 0`` (training) or ``the
        state of input node 3 after the call`` (a program that writes its inputs)."""
        d = self.diverging.details if self.diverging is not None else Details()
        if d.gradient_of is not None:
            return f"the gradient of input node {d.gradient_of}"
        if d.state_of is not None:
            return f"the state of input node {d.state_of} after the call"
        if d.of_output is not None:
            return f"output {d.of_output}"
        return f"output {self.output}"

    def _details_summary(self, out: OutputVerdict) -> str | None:
        """The summary from ``out``'s details; None where they lack a field it needs."""
        d = out.details
        if self.kind in FLIPS or (self.kind == Kind.BENIGN and d.fp64_agrees is not None):
            agrees = d.fp64_agrees or Agrees()
            against_eager = d.reference == "eager"  # float64's side not measured
            if None in (d.count, d.total, d.max_abs_diff) or not against_eager \
                    and None in (agrees.eager, agrees.compiled):
                return None
            strong = f" ({d.strong} strong evidence)" \
                if self.kind == Kind.INT_FLIP and d.strong is not None else ""
            sides = "" if against_eager else \
                f", float64 sides with eager on {agrees.eager}, with compiled on {agrees.compiled}"
            return (f"{self.kind} ({given(d.evidence, '?')} evidence) in {self.place} "
                    f"({out.dtype}): {d.count}/{d.total} "
                    f"elements differ{strong}, max |diff| {d.max_abs_diff}"
                    + sides + _distance(d) + _parity(self.kind, d))
        if self.kind in (Kind.NONFINITE, Kind.HIDDEN_NONFINITE, Kind.BENIGN,
                         Kind.EAGER_NONFINITE, Kind.SIGNED_ZERO):
            if d.count is None:
                return None
            return f"{self.kind} in {self.place} ({out.dtype}): {d.count} elements"
        return f"{self.kind} in {self.place} ({out.dtype}): {given(d.reason, '')}"


def _checked_output(data: object) -> dict:
    """An output verdict's fields, TypeError unless they have its types (its details are
    checked by ``Details.from_dict`` as the output verdict is built)."""
    if not isinstance(data, dict):
        raise TypeError("an output verdict must be a dict")
    if not isinstance(data.get("output"), int) or not isinstance(data.get("node"), int) \
            or not isinstance(data.get("dtype"), str) \
            or not isinstance(data.get("details", {}), dict):
        raise TypeError("malformed output verdict")
    return data


def _parity(kind: str, details: Details) -> str:
    if kind != Kind.PARITY:
        return ""
    return (f"; against eager: {given(details.regressing, '?')} regress, "
            f"{given(details.benign, '?')} are at least as close to float64")


def _distance(details: Details) -> str:
    low, high = details.min_ulps, details.max_ulps
    if high is None:
        return ""
    span = ulps_text(low) if low == high else f"{ulps_text(low)} to {ulps_text(high)}"
    return f"; {span} ulps from the boundary"


def ulps_text(value: float | None) -> str:
    """A distance in ulps as ``repro.py`` prints it: three significant digits, and ``nan``
    where float64 itself was not finite (the record holds None)."""
    return "nan" if value is None else f"{value:.3g}"


def severity_key(v: Verdict) -> tuple[int, int]:
    """Sorts most severe first: by kind (``RANK``; then ok, then skip), and within a kind by
    the number of strong elements, most first."""
    order = RANK.index(v.kind) if v.kind in RANK else len(RANK) + (v.kind == Kind.SKIP)
    out = v.diverging
    strong = out.details.strong if out is not None else None
    return order, -given(strong, 0)


def most_severe(verdicts: list[Verdict]) -> Verdict:
    """The draw to keep: the most severe kind, and among int-flips the strongest evidence."""
    return min(verdicts, key=severity_key)

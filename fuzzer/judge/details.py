"""What one output's verdict records beyond its kind, typed: ``Details`` and its ``Element``s.

The judge fills them (``oracle``: the counts, the evidence, the distances, the differing elements;
``semantics``: which input's state or gradient the value is, how index outputs were judged); a
summary, a replay table, an issue draft, a repro header, the minimizer and triage read them by
attribute. A field the judge did not record is None (``elements``: empty).

On the wire they are plain data: ``to_dict`` writes the keys case files have always held (a field
not recorded is left out, as the judge never wrote it), so case files, worker pipes, Ray actors and
``--json`` carry what they always did. ``from_dict`` is the one place such data is checked: a case
file is data from anywhere, so every field must hold what the judge writes there (a count an
integer, a distance a number or None, text text, each element an integer index), else TypeError
with one line naming the field, which the case loader turns into a ``CaseError``. A key present
with None reads as not recorded, except a head's distances (``Distance``: there None says float64
was not finite, and the keys say the head measured the element). Keys this numfuzz does not
know (a newer file's) are dropped: nothing here reads them, and carrying unchecked values from a
file into re-saved cases, drafts and ``--json`` output is what checking field by field is there
to prevent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

Value = bool | int | float | None  # an element's code or value (None: not recorded)

T = TypeVar("T")
D = TypeVar("D")


def given(value: T | None, default: D) -> T | D:
    """``value``, or ``default`` where the record does not hold it (None)."""
    return default if value is None else value


@dataclass
class Agrees:
    """On a discrete output's differing elements: how many of float64's codes equal eager's,
    compiled's, neither."""

    eager: int | None = None
    compiled: int | None = None
    neither: int | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in (("eager", self.eager), ("compiled", self.compiled),
                                  ("neither", self.neither)) if v is not None}

    @classmethod
    def from_dict(cls, data: object) -> Agrees:
        data = _record(data, "fp64_agrees")
        return cls(*(_integer(data, k, "fp64_agrees") for k in ("eager", "compiled", "neither")))


@dataclass
class Distance:
    """What a head measured at one element (``oracle.Head``): float64's distance from the
    boundary and eager's noise at the head's input, in ulps of the working dtype, and float64's
    value at the head's input. None where float64 was not finite (strict JSON has no NaN)."""

    ulps: float | None = None
    eager_noise_ulps: float | None = None
    head_input_fp64: float | None = None

    KEYS = ("ulps", "eager_noise_ulps", "head_input_fp64")


@dataclass
class Element:
    """One differing element: where (``index``), the three sides' values, and for a discrete
    output how the rules read it (``regresses``, ``strong``, ``stable``: None on a float output's
    element, which its output's kind describes), where a head measured it (``distance``), and for
    an index output judged by what it selects the indices themselves."""

    index: list[int]
    eager: Value = None
    compiled: Value = None
    fp64: Value = None
    regresses: bool | None = None  # compiled's code further from float64's than eager's
    strong: bool | None = None  # and strong evidence (``rules.evidence``)
    stable: bool | None = None  # float64's code survives eager's noise (``rules.stable_codes``)
    distance: Distance | None = None
    eager_index: int | None = None
    compiled_index: int | None = None
    fp64_index: int | None = None
    # the values those indices select in float64 (eager's, compiled's, float64's; None where not
    # finite: strict JSON has no NaN), and what is wrong with compiled's index
    # (``semantics.Selection.fault``; '' where torch allows it)
    selected: list[float | None] | None = None
    fault: str | None = None

    def to_dict(self) -> dict:
        data: dict[str, object] = {"index": list(self.index), "eager": self.eager,
                                "compiled": self.compiled, "fp64": self.fp64}
        for name in ("regresses", "strong", "stable"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        if self.distance is not None:  # all three, None included: a head measured it
            data.update({k: getattr(self.distance, k) for k in Distance.KEYS})
        picked = ("eager_index", "compiled_index", "fp64_index")
        if any(getattr(self, name) is not None for name in picked):  # all three, as recorded
            data.update({name: getattr(self, name) for name in picked})
        if self.selected is not None:
            data["selected"] = list(self.selected)
        if self.fault is not None:
            data["fault"] = self.fault
        return data

    @classmethod
    def from_dict(cls, data: object) -> Element:
        data = _record(data, "elements")
        index = data.get("index")
        if not isinstance(index, list) or not all(_is_integer(i) for i in index):
            raise TypeError("malformed verdict details: an element's index must be a list of "
                            "integers")
        eager, compiled, fp64 = (_value(data, k) for k in ("eager", "compiled", "fp64"))
        regresses, strong, stable = (_flag(data, k) for k in ("regresses", "strong", "stable"))
        eager_index, compiled_index, fp64_index = (
            _integer(data, k, "an element's")
            for k in ("eager_index", "compiled_index", "fp64_index"))
        measured = any(k in data for k in Distance.KEYS)
        distance = Distance(*(_number(data, k, "an element's") for k in Distance.KEYS)) \
            if measured else None
        selected = data.get("selected")
        if selected is not None and not (isinstance(selected, list) and len(selected) == 3 and all(
                v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                for v in selected)):
            raise TypeError("malformed verdict details: an element's selected must be three "
                            "numbers or nulls")
        fault = data.get("fault")
        if fault is not None and not isinstance(fault, str):
            raise TypeError("malformed verdict details: an element's fault must be text")
        return cls(list(index), eager, compiled, fp64, regresses=regresses, strong=strong,
                   stable=stable, distance=distance, eager_index=eager_index,
                   compiled_index=compiled_index, fp64_index=fp64_index,
                   selected=None if selected is None else
                   [None if v is None else float(v) for v in selected],
                   fault=fault)


@dataclass
class Details:
    """What one output's verdict records (``OutputVerdict.details``); None: not recorded."""

    # the differing elements of a discrete or non-finite output
    count: int | None = None  # elements that differ
    total: int | None = None  # elements in the output
    regressing: int | None = None  # discrete: compiled's code further from float64's
    benign: int | None = None  # discrete: differ, compiled at least as close
    strong: int | None = None  # regressing with strong evidence
    max_abs_diff: int | float | None = None  # codes (discrete) or values (accuracy)
    fp64_agrees: Agrees | None = None
    evidence: str | None = None  # strong, weak or none (discrete)
    chaotic: int | None = None  # regressing where float64's code moved under eager's noise
    min_ulps: float | None = None  # float64's distance from the boundary over the elements
    max_ulps: float | None = None
    elements: list[Element] = field(default_factory=list)  # the first MAX_ELEMENTS, worst first
    # an accuracy finding
    rmse_eager: float | None = None
    rmse_compiled: float | None = None
    reason: str | None = None  # what a meta, accuracy, aliasing or benign verdict says
    # what the judged value is, where not the output ``output`` itself
    gradient_of: int | None = None  # the input node whose gradient it is (training)
    state_of: int | None = None  # the input node whose value after the call it is
    of_output: int | None = None  # aliasing: the output position whose storage differs
    unstable: int | None = None  # elements that varied run to run (left out of judging)
    judged_by: str | None = None  # how, where not by float64's rule on the value itself
    reference: str | None = None  # "eager" where eager's values stood for float64's, else None

    INTEGERS = ("count", "total", "regressing", "benign", "strong", "chaotic", "gradient_of",
                "state_of", "of_output", "unstable")
    NUMBERS = ("max_abs_diff", "min_ulps", "max_ulps", "rmse_eager", "rmse_compiled")
    TEXTS = ("evidence", "reason", "judged_by", "reference")
    ORDER = ("count", "total", "regressing", "benign", "strong", "max_abs_diff", "fp64_agrees",
             "evidence", "chaotic", "min_ulps", "max_ulps", "elements", "reason", "rmse_eager",
             "rmse_compiled", "gradient_of", "state_of", "of_output", "unstable", "judged_by",
             "reference")

    def to_dict(self) -> dict:
        """Plain data, the keys the judge has always written; what was not recorded left out.
        Where a head measured the elements, the span of their distances is recorded even where
        float64 was not finite (None), as the judge writes it."""
        measured = any(e.distance is not None for e in self.elements)
        data: dict[str, object] = {}
        for name in self.ORDER:
            value = getattr(self, name)
            if name == "elements":
                if value:
                    data[name] = [e.to_dict() for e in value]
            elif name == "fp64_agrees":
                if value is not None:
                    data[name] = value.to_dict()
            elif value is not None or (measured and name in ("min_ulps", "max_ulps")):
                data[name] = value
        return data

    @classmethod
    def from_dict(cls, data: object) -> Details:
        """The record in plain data, checked field by field (TypeError on one that does not hold
        what the judge writes there); unknown keys are dropped (the module's docstring)."""
        data = _record(data, "details")
        values: dict[str, Any] = {}
        for name in cls.INTEGERS:
            values[name] = _integer(data, name)
        for name in cls.NUMBERS:
            values[name] = _number(data, name)
        for name in cls.TEXTS:
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"malformed verdict details: {name} must be text")
            values[name] = value
        agrees = data.get("fp64_agrees")
        values["fp64_agrees"] = None if agrees is None else Agrees.from_dict(agrees)
        elements = data.get("elements")
        if elements is not None and not isinstance(elements, list):
            raise TypeError("malformed verdict details: elements must be a list")
        values["elements"] = [Element.from_dict(e) for e in elements or []]
        return cls(**values)


def _record(data: object, what: str) -> dict:
    if not isinstance(data, dict):
        raise TypeError(f"malformed verdict details: {what} must be a dict")
    return data


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _integer(data: dict, name: str, whose: str = "") -> int | None:
    value = data.get(name)
    if value is not None and not _is_integer(value):
        raise TypeError(f"malformed verdict details: {whose + ' ' if whose else ''}{name} must "
                        "be an integer")
    return value


def _number(data: dict, name: str, whose: str = "") -> int | float | None:
    value = data.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise TypeError(f"malformed verdict details: {whose + ' ' if whose else ''}{name} must "
                        "be a number")
    return value


def _value(data: dict, name: str) -> Value:
    """An element's code or value: a number (bool is an int), or None."""
    value = data.get(name)
    if value is not None and not isinstance(value, (int, float)):
        raise TypeError(f"malformed verdict details: an element's {name} must be a number")
    return value


def _flag(data: dict, name: str) -> bool | None:
    value = data.get(name)
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"malformed verdict details: an element's {name} must be true or false")
    return value

"""What a cause is worth (issue 50): the value class from the minimized case, the nightly's order
of work by it both ways, the shrinker trying ordinary values for edge ones, and a cause known by
its mechanism whatever kind it shows as (``copysign(x, clamp(y, -0.0, 0.0))`` is the known
``minimum`` signed-zero bug seen through an accuracy verdict)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
import torch

from fuzzer.corpus.case import Case
from fuzzer.execute.task import Task
from fuzzer.gen.grammar import Builder
from fuzzer.ir.graph import Graph
from fuzzer.judge.kinds import Kind, facts
from fuzzer.judge.verdict import Verdict
from fuzzer.nightly.backlog import served
from fuzzer.report import ranking
from fuzzer.report.store import Finding, Store
from fuzzer.triage import known, locate, value
from fuzzer.triage.signature import signature_fields


def _graph(op: str = "exp") -> tuple[Graph, int]:
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    b.graph.outputs = [b.op(op, x)]
    return b.graph, x


def _case(kind: str, values: list[float], message: str = "") -> Case:
    graph, x = _graph()
    verdict = Verdict(kind, 0, graph.outputs[0], message=message)
    return Case(graph=graph, inputs={str(x): torch.tensor(values)}, verdict=verdict)


ORDINARY = [0.5, -1.25, 3.0, 0.0]


@pytest.mark.parametrize("kind,values,message,expected", [
    (Kind.ACCURACY, ORDINARY, "", 1),
    (Kind.NONFINITE, ORDINARY, "", 1),
    (Kind.NONFINITE, [0.5, float("inf"), 3.0, 0.0], "", 4),
    (Kind.INT_FLIP, [3.0e38, 1.0, 1.0, 1.0], "", 4),  # near float32's largest
    (Kind.ACCURACY, [1e-40, 1.0, 1.0, 1.0], "", 4),  # a subnormal
    (Kind.ALIASING, ORDINARY, "", 2),
    (Kind.CRASH, ORDINARY, "RuntimeError: boom", 3),
    (Kind.MEMORY, [float("nan"), 1.0, 1.0, 1.0], "worker killed by SIGSEGV", 1),
    (Kind.SIGNED_ZERO, ORDINARY, "", 5),
])
def test_the_value_class_of_a_case(kind, values, message, expected) -> None:
    found = value.classify(_case(kind, values, message))
    assert found.number == expected, found
    assert found.line().startswith(f"Value class {expected} of 5: {value.CLASSES[expected]}")


def test_a_zero_of_the_wrong_sign_found_upstream_of_the_output_is_class_5() -> None:
    case = _case(Kind.ACCURACY, ORDINARY)
    assert value.classify(case).number == 1
    shown = value.classify(case, {"op": "clamp", "kind": "signed-zero"})
    assert shown.number == 5 and "clamp" in shown.why


def test_an_empty_input_and_an_infinite_constant_are_edges() -> None:
    graph, x = _graph()
    empty = Case(graph=graph, inputs={str(x): torch.ones(0)}, verdict=Verdict(Kind.META))
    assert value.classify(empty).number == 4 and "empty" in value.edge_inputs(empty)
    b = Builder(random.Random(0), "float32")
    y = b.input((4,))
    b.graph.outputs = [b.op("add_scalar", y, value=float("inf"))]
    constant = Case(graph=b.graph, inputs={str(y): torch.ones(4)},
                    verdict=Verdict(Kind.NONFINITE, 0, b.graph.outputs[0]))
    assert value.classify(constant).number == 4


def _finding(kind: str, value_class: int, first_seen: str) -> Finding:
    return Finding(signature=f"{kind}-{value_class}", kind=kind, device="cpu", dtype="float32",
                   op_chain="x", value_class=value_class, first_seen=first_seen)


def test_drafts_go_by_value_class_before_kind_both_ways() -> None:
    """Non-finite first was the old order: now a class-1 accuracy cause goes before a class-4
    non-finite one, and a class-1 non-finite one before a class-4 accuracy one."""
    edge_nonfinite, plain_accuracy = _finding("nonfinite", 4, "1"), _finding("accuracy", 1, "2")
    assert ranking.ranked([edge_nonfinite, plain_accuracy]) == [plain_accuracy, edge_nonfinite]
    plain_nonfinite, edge_accuracy = _finding("nonfinite", 1, "3"), _finding("accuracy", 4, "1")
    assert ranking.ranked([edge_accuracy, plain_nonfinite]) == [plain_nonfinite, edge_accuracy]
    zero = _finding("signed-zero", 5, "0")
    old = _finding("crash", None, "0")  # recorded before value classes: last
    assert ranking.ranked([old, zero, edge_accuracy])[-1] is old


def test_the_nightly_minimizes_by_value_class_first_both_ways(tmp_path: Path) -> None:
    files = {}
    for name, kind, values in (("edge-nonfinite", Kind.NONFINITE, [float("inf"), 1.0, 1.0, 1.0]),
                               ("plain-accuracy", Kind.ACCURACY, ORDINARY),
                               ("zero", Kind.SIGNED_ZERO, ORDINARY),
                               ("plain-nonfinite", Kind.NONFINITE, [1.0, 2.0, 3.0, 4.0]),
                               ("edge-accuracy", Kind.ACCURACY, [1e-40, 1.0, 1.0, 1.0])):
        files[name] = _case(kind, values).save(tmp_path / f"{name}.pt")
        os.utime(files[name], (1_000_000, 1_000_000))
    with Store.in_reports(tmp_path / "reports") as store:
        order = [p.stem for p in served(tmp_path, store)]
    assert order.index("plain-nonfinite") < order.index("edge-nonfinite")
    assert order.index("plain-accuracy") < order.index("edge-accuracy")
    assert order[-1] == "zero"


def test_the_shrinker_tries_ordinary_values_for_edge_ones() -> None:
    from fuzzer.reduce.shrinker import Shrinker

    case = _case(Kind.NONFINITE, [float("inf"), 1e-40, 2.0, -3.0e38])
    best = Shrinker(case, lambda candidate: True).shrink()
    assert value.classify(best).number == 1, best.inputs
    kept = Shrinker(case, lambda c: bool(torch.isinf(next(iter(c.inputs.values()))).any()))
    assert value.classify(kept.shrink()).number == 4  # the inf is needed: it stays, class 4


def copysign_of_a_zero_clamp() -> tuple[Graph, dict[str, torch.Tensor]]:
    """``copysign(x, clamp(y, -0.0, 0.0))``: the night's accuracy finding on 2.15 (x = 1.75,
    y = -16.0: eager and float64 -1.75, compiled 1.75): clamp lowers to maximum then minimum,
    and compiled's minimum(-0.0, 0.0) is +0.0 (#194347)."""
    b = Builder(random.Random(0), "float32")
    x, y = b.input((4,)), b.input((4,))
    b.graph.outputs = [b.op("copysign", x, b.op("clamp", y, lo=-0.0, hi=0.0))]
    return b.graph, {str(x): torch.tensor([1.75, 1.0, 2.0, 3.0]),
                     str(y): torch.tensor([-16.0, 3.0, -1.0, 0.5])}


@pytest.mark.inductor
def test_the_copysign_of_a_zero_clamp_is_a_hit_on_the_minimum_signed_zero_entry(
        inductor_runner) -> None:
    graph, inputs = copysign_of_a_zero_clamp()
    verdict = inductor_runner.run(Task(graph=graph, draws=[inputs])).verdict
    assert verdict.kind == Kind.ACCURACY, verdict.summary()  # what the night saw
    case = Case(graph=graph, inputs=inputs, verdict=verdict)
    found = locate.locate(case, inductor_runner)
    assert (found.label, found.kind, found.confirmed) == ("clamp", "signed-zero", True)
    fields = signature_fields(case, None)
    entries = known.entries()
    assert known.match(fields, entries) is None  # by the kind it showed: no entry
    root = {"op": found.label, "family": facts(found.kind).family}
    entry = known.match({**fields, "root": root}, entries)
    assert entry is not None and entry.id == "minimum-signed-zero"
    assert value.classify(case, {"op": found.label, "kind": found.kind}).number == 5

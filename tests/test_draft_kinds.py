"""Drafts of every kind read for claims that do not hold (issue 59): each paragraph is chosen by
what the case is. A draft of each kind is rendered from a case whose verdict a judge wrote (an
index output's by ``semantics.judge_graph``, the rest by hand as a worker would), and every
claim in ``CLAIMS`` may appear only in the drafts of the kinds it is true for."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest
import torch

from fuzzer.corpus.case import Case
from fuzzer.execute import runner
from fuzzer.gen.grammar import Builder
from fuzzer.ir import render
from fuzzer.judge import rules, semantics
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import OutputVerdict, Verdict
from fuzzer.reduce import snippet
from fuzzer.report import draft, labels
from fuzzer.report.store import Finding
from fuzzer.triage.attribute import Attribution, KnobResult

ENV = "PyTorch version: 2.15.0+cpu\nOS: test\n"
HEAP = "worker killed by SIGABRT: free(): invalid next size (fast)"

# A claim (a pattern) → the drafts it is true for (names of the cases below). Anything else
# saying it is a sentence a maintainer could fault.
CLAIMS = {
    r"malloc|heap|past the end|write past": {"memory"},
    r"\bulps?\b": {"float-flip"},
    r"rounding difference upstream|discontinuity": {"float-flip"},
    r"less accurate|RMSE": {"accuracy"},
    r"inf/NaN": {"nonfinite", "hidden-nonfinite"},
    r"other sign": {"signed-zero"},
    r"promises": {"promise"},
    r"hangs where eager returns|does not return where eager does": {"timeout"},
    r"no comparison of argmax/argmin": set(),
    r"not the minimum": {"index-value", "index-value-uint8"},
    r"out of range": {"index-range"},
    r"not the first of equal values": {"index-tie"},
    r"raises where eager runs|raises [A-Z]\w+Error": {"crash"},
    r"differ: \)": set(),  # a sentence whose why is missing
}


def _graph(dtype: str, *ops_: tuple[str, dict], shape: tuple[int, ...] = (4,),
           input_dtype: str | None = None):
    b = Builder(random.Random(0), dtype)
    x = b.input(shape, **({"dtype": input_dtype} if input_dtype else {}))
    node = x
    for op, attrs in ops_:
        node = b.op(op, node, **attrs)
    b.graph.outputs = [node]
    return b.graph, x, node


def _by_hand(kind: Kind, graph, x, out, values, dtype: str, details: dict | None = None,
             message: str = "") -> Case:
    outputs = [] if details is None else [OutputVerdict(0, out, kind, dtype, details)]
    verdict = Verdict(kind, 0 if outputs else None, out if outputs else None, outputs,
                      message=message)
    return Case(graph=graph, inputs={str(x): values}, verdict=verdict)


def _judged_index(plant: int, values: torch.Tensor, dtype: str) -> Case:
    """argmin over a row, judged by the real rule with compiled's index planted."""
    graph, x, out = _graph("float32", ("argmin", {"dim": 1, "keepdim": False}),
                           shape=tuple(values.shape), input_dtype=dtype)
    trace = render.load(render.render_trace(graph), "trace")
    eager = trace(values)
    fp64 = rules.float64_run(trace, [values])
    compiled = eager[out].clone().fill_(plant)
    verdict = semantics.judge_graph(graph, [eager[out]], [compiled], fp64, eager,
                                    nudged=lambda: runner.nudged_runs(graph, [values]))
    return Case(graph=graph, inputs={str(x): values}, verdict=verdict)


def cases() -> dict[str, Case]:
    row = torch.arange(8, 0, -1).reshape(1, 8)
    made: dict[str, Case] = {
        "index-value-uint8": _judged_index(0, row.to(torch.uint8), "uint8"),
        "index-value": _judged_index(0, row.float(), "float32"),
        "index-range": _judged_index(-3087562610450605308, row.to(torch.uint8), "uint8"),
        "index-tie": _judged_index(7, torch.tensor([[3.0, 1.0, 2.0, 5.0, 4.0, 7.0, 6.0, 1.0]]),
                                   "float32"),
    }
    g, x, out = _graph("float32", ("expm1", {}), ("sign_int8", {}))
    made["float-flip"] = _by_hand(Kind.INT_FLIP, g, x, out, torch.tensor([1e-8, 1.0, 2.0, 3.0]),
                                  "int8", {"count": 1, "total": 4, "min_ulps": 3.0,
                                           "max_ulps": 3.0, "elements": [
                                               {"index": [0], "eager": 1, "compiled": 0,
                                                "fp64": 1, "ulps": 3.0,
                                                "eager_noise_ulps": 0.5}]})
    g, x, out = _graph("float32", ("sign_int8", {}))  # of an input: nothing rounded
    made["input-flip"] = _by_hand(Kind.INT_FLIP, g, x, out, torch.tensor([1.0, -2, 3, 4]),
                                  "int8", {"count": 1, "total": 4, "elements": [
                                      {"index": [0], "eager": 1, "compiled": 0, "fp64": 1}]})
    g, x, out = _graph("float32", ("abs", {}), input_dtype="int16")
    made["int-flip"] = _by_hand(Kind.INT_FLIP, g, x, out,
                                torch.tensor([-3, 1, 2, 4], dtype=torch.int16), "int16",
                                {"count": 1, "total": 4, "elements": [
                                    {"index": [0], "eager": 3, "compiled": -3, "fp64": 3}]})
    g, x, out = _graph("float32", ("exp", {}))
    made["nonfinite"] = _by_hand(Kind.NONFINITE, g, x, out, torch.tensor([1.0, 2, 3, 4]),
                                 "float32", {"count": 1, "total": 4, "elements": [
                                     {"index": [0], "eager": 2.7, "compiled": float("inf"),
                                      "fp64": 2.7}]})
    made["hidden-nonfinite"] = _by_hand(
        Kind.HIDDEN_NONFINITE, g, x, out, torch.tensor([100.0, 2, 3, 4]), "float32",
        {"count": 1, "total": 4, "elements": [
            {"index": [0], "eager": float("inf"), "compiled": 3.4e38, "fp64": float("inf")}]})
    made["accuracy"] = _by_hand(Kind.ACCURACY, g, x, out, torch.tensor([1.0, 2, 3, 4]),
                                "float32", {"rmse_eager": 1e-7, "rmse_compiled": 1e-3,
                                            "reason": "RMSE 1e-3 > 1e-7 * 1.5"})
    made["aliasing"] = _by_hand(Kind.ALIASING, g, x, out, torch.tensor([1.0, 2, 3, 4]),
                                "float32", {"reason": "output 0 shares storage with input 0 "
                                                      "under torch.compile only"})
    made["signed-zero"] = _by_hand(Kind.SIGNED_ZERO, g, x, out, torch.tensor([0.0, 1, 2, 3]),
                                   "float32", {"count": 1, "total": 4, "elements": [
                                       {"index": [0], "eager": 0.0, "compiled": -0.0,
                                        "fp64": 0.0}]})
    made["promise"] = _by_hand(Kind.PROMISE, g, x, out, torch.tensor([1.0, 2, 3, 4]), "float32",
                               {"reason": "numerics='strict' promises eager's values; 1 of 4 "
                                          "elements differ"})
    made["meta"] = _by_hand(Kind.META, g, x, out, torch.tensor([1.0, 2, 3, 4]), "float32",
                            {"reason": "compiled gave shape (4, 1), eager (4,)"})
    made["timeout"] = _by_hand(Kind.TIMEOUT, g, x, out, torch.tensor([1.0, 2, 3, 4]),
                               "float32", message="no answer within 300s")
    made["crash"] = _by_hand(Kind.CRASH, g, x, out, torch.tensor([1.0, 2, 3, 4]), "float32",
                             message="AssertionError: expected compiled_fn to be GraphModule")
    made["memory"] = _by_hand(Kind.MEMORY, g, x, out, torch.tensor([1.0, 2, 3, 4]), "float32",
                              message=HEAP)
    for case in made.values():  # every night's CPU case runs under glibc's malloc checking
        case.origin = {"malloc_check": True}
    return made


def attribution_of(layer: str) -> Attribution:
    outcomes = {"inductor": ("vanishes", "vanishes"), "aotautograd": ("vanishes", "persists"),
                "dynamo": ("persists", "persists")}[layer]
    return Attribution(True, "reproduces", [KnobResult("backend=eager", outcomes[0]),
                                            KnobResult("backend=aot_eager", outcomes[1])])


def drafted(name: str, case: Case, tmp_path: Path, printed: str = "") -> str:
    plain = snippet.plain_repro(case, None, tmp_path, name)
    finding = Finding(signature="0" * 16, kind=str(case.verdict.kind), device="cpu",
                      dtype="float32", op_chain="", title=draft.title_for(case))
    cause = draft.Cause(finding, case, attribution_of("inductor"), plain, (0, printed), ENV)
    return draft.render_draft(cause, tmp_path / f"{name}.md")


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("drafts")
    return {name: drafted(name, case, folder) for name, case in cases().items()}


@pytest.mark.parametrize("claim", sorted(CLAIMS))
def test_a_claim_appears_only_in_drafts_it_is_true_for(every_kind, claim: str) -> None:
    saying = {name for name, text in every_kind.items()
              if re.search(claim, text, re.IGNORECASE)}
    assert saying <= CLAIMS[claim], (claim, sorted(saying - CLAIMS[claim]))


def test_each_index_fault_is_in_its_title_and_its_table(every_kind) -> None:
    for name, fault in (("index-value-uint8", "not the minimum"), ("index-range", "out of range"),
                        ("index-tie", "not the first of equal values")):
        title = every_kind[name].splitlines()[0]
        assert fault in title, title
        assert "| element | eager: index (value it selects)" in every_kind[name]
    assert "gives index 0, not the minimum (eager 7)" in every_kind["index-value-uint8"]


def test_every_draft_isolates_the_backend_and_gives_labels(every_kind) -> None:
    for name, text in every_kind.items():
        assert "**Backend isolation**" in text, name
        assert "`module: inductor`" in text and "`topic: fuzzer`" in text, name


@pytest.mark.parametrize("layer,label", [("inductor", "module: inductor"),
                                         ("aotautograd", "module: pt2-dispatcher"),
                                         ("dynamo", "module: dynamo")])
def test_the_first_backend_that_shows_it_names_the_layer(layer: str, label: str) -> None:
    case = cases()["float-flip"]
    found = labels.isolate(case, attribution_of(layer))
    assert found.layer == layer and label in found.labels()
    assert labels.isolate(case, None).labels() == list(labels.ALWAYS)


def test_a_snippet_printing_other_values_than_the_table_is_said_plainly(tmp_path) -> None:
    """The argmin draft's table said eager 0 / compiled 6 while its snippet printed other
    values: a compiled result that changes run to run. The draft says so, and only then."""
    case = cases()["index-value-uint8"]
    same = drafted("same", case, tmp_path, "(0,) eager 7 compiled 0")
    other = drafted("other", case, tmp_path, "(0,) eager 7 compiled -5606066742797011892")
    assert "printed other values than the table" not in same
    assert "printed other values than the table" in other
    assert "compiled -5606066742797011892 here; eager 7, compiled 0 in the table" in other


def test_a_plain_run_under_torch_trace_becomes_a_tlparse_report(tmp_path) -> None:
    """What a draft's tlparse paragraph names exists: a script run as a draft's plain run is
    (``run_snippet``: forked from the zygote, which set torch's logs up without a trace) with the
    trace environment (``report.tlparse``) leaves a trace that tlparse renders, and the next
    run without it leaves none there; without a trace none is claimed."""
    from fuzzer.execute import zygote
    from fuzzer.nightly.drafts import run_snippet
    from fuzzer.report import tlparse

    if tlparse.tool() is None:
        pytest.skip("tlparse is not installed (pip install numfuzz[trace])")
    script = tmp_path / "plain.py"
    script.write_text("import torch\nf = torch.compile(lambda x: x.sin() + 1, backend='eager')\n"
                      "print(f(torch.ones(3)))\n")
    trace = tmp_path / "trace"
    assert zygote.forkable({**os.environ, **tlparse.trace_environment(trace)})
    code, printed = run_snippet(script, timeout=300, extra_env=tlparse.trace_environment(trace))
    assert code == 0 and "tensor" in printed, printed
    logs = sorted(trace.glob("*.log"))
    assert run_snippet(script, timeout=300)[0] == 0 and sorted(trace.glob("*.log")) == logs
    report = tlparse.render(trace, tmp_path / "report")
    assert report is not None and report.name == "index.html", list(trace.iterdir())
    said = tlparse.paragraph(trace, report, tmp_path / "draft.md")
    assert "`report/index.html`" in said and "`trace/`" in said
    assert tlparse.render(tmp_path / "no-trace", tmp_path / "none") is None
    # the plain run's folder is not the night's: a relative --reports still names one place
    assert Path(tlparse.trace_environment(Path("reports/x.trace"))["TORCH_TRACE"]).is_absolute()


def test_an_older_attribution_without_an_eager_run_names_no_layer_it_cannot_tell() -> None:
    """Before the eager-backend knob, aot_eager persisting could be Dynamo's or AOTAutograd's:
    no layer, no module label, and the draft says the eager run was not made."""
    case = cases()["float-flip"]
    older = Attribution(True, "reproduces", [KnobResult("backend=aot_eager", "persists")])
    assert labels.isolate(case, older).layer == ""
    text = labels.isolation_text(case, older)
    assert "`backend=\"eager\"` not run" in text and "not told apart" in text
    assert "pt2-dispatcher" not in text


@pytest.mark.parametrize("path,name,tag", [("export", "torch.export", "[export]"),
                                           ("aoti", "AOTInductor", "[aotinductor]")])
def test_a_deployments_draft_names_what_ran_it_not_torch_compile(tmp_path, path: str, name: str,
                                                                  tag: str) -> None:
    """The export aliasing draft of a real night said "under torch.compile" and "Inductor shows
    it" of a program only torch.export ran."""
    from dataclasses import replace

    from fuzzer.execute.recipe import Recipe
    from fuzzer.execute.surface import Surface

    case = cases()["aliasing"]
    case.recipe = Recipe(surface=Surface(path=path, name=path))
    text = drafted(path, case, tmp_path)
    title = text.splitlines()[0].split(":")[0]  # the reason after it is the verdict's own
    assert tag in title and f"under {name}" in title and "torch.compile" not in title, title
    assert f"`{name}` (" in text and f"the case's own path ({path}) shows it" in text
    assert replace(case, recipe=Recipe()).recipe.surface.path == "compile"

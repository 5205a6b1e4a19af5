"""``numfuzz locate`` (issue 52): the first op whose compiled value is further from float64 than
eager's, on the user's own line, in its submodule; a divergence no prefix shows is said to need
the whole graph; ops called through ``torch.ops`` load and keep the name the user wrote. Planted
through fake backends (``tests.fakes``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from fuzzer.cli import main
from fuzzer.ir import render
from fuzzer.user.capture import capture_file

MODELS = Path(__file__).resolve().parent / "models" / "locate"


def locate(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["locate", *args, "--json"])
    return result.exit_code, json.loads(result.output) if result.output.startswith("{") else \
        {"output": result.output}


def line_of(path: Path, needle: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


def test_a_divergence_planted_at_one_op_is_located_on_its_line_in_its_submodule() -> None:
    model = MODELS / "deep_erf.py"
    code, report = locate(str(model), "--backend", "tests.fakes:erf_nan", "--no-triage")
    assert code == 1, report
    location = report["location"]
    found = next(p for p in location["probes"] if p["node"] == location["node"])
    assert (location["label"], location["confirmed"]) == ("erf", True), location
    assert found["source"]["file"] == str(model)
    assert found["source"]["line"] == line_of(model, "torch.erf(h)")
    assert found["source"]["module"] == "blocks.2.act"
    assert found["kind"] == "nonfinite" and found["compiled_ulps"] == "inf"
    # the bisection compiled a few prefixes, not all twenty ops' own
    assert len(location["probes"]) < len(location["path"]) / 2


def test_a_divergence_that_needs_the_whole_graph_is_said_to_need_it() -> None:
    code, report = locate(str(MODELS / "two_outputs.py"), "--backend",
                          "tests.fakes:inf_with_two_outputs", "--no-triage")
    assert code == 1, report
    location = report["location"]
    assert location["node"] is None and "needs the rest of the graph" in location["note"]


def test_nothing_to_locate_where_it_does_not_diverge() -> None:
    result = CliRunner().invoke(main, ["locate", str(MODELS / "two_outputs.py"), "--backend",
                                       "eager"])
    assert result.exit_code == 3 and "nothing to locate" in result.output, result.output


def test_an_aten_operator_called_directly_loads_under_the_name_written() -> None:
    captured = capture_file(MODELS / "aten_call.py")
    source = render.render_function(captured.graph)
    assert "torch.ops.aten.avg_pool2d_backward(" in source, source
    sources = captured.origin["sources"].values()
    assert any("torch.ops.aten.avg_pool2d_backward" in s["code"] for s in sources)

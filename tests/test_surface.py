"""The compile surface (issue 15): --dynamic, --mode, --inductor-config and --training are
recorded in every case, honoured by replay, minimize and repro.py, and refused in one line when
they cannot apply. Planted through fake backends: a divergence only a dynamic-shape compile shows,
and one only the backward shows (``tests.fakes.nan_when_dynamic``, ``scaled_gradients``)."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from fuzzer.campaign.local import run_campaign
from fuzzer.campaign.loop import Outcome, Summary
from fuzzer.campaign.settings import make_case
from fuzzer.corpus.case import Case
from fuzzer.corpus.replay import replay_case
from fuzzer.errors import CaseError
from fuzzer.execute import calling
from fuzzer.execute import runner as runner_module
from fuzzer.execute.surface import Surface
from fuzzer.gen.strategy import for_training
from fuzzer.reduce.repro import write_repro
from tests.conftest import campaign_settings, minimized, python, run_repro


def numfuzz(*args: str) -> subprocess.CompletedProcess:
    return python("-m", "fuzzer", *args)


@pytest.mark.parametrize("data,words", [
    ({"mode": "fast"}, "mode 'fast'"), ({"dynamic": 1}, "true or false"),
    ({"training": "yes"}, "true or false"), ({"fullgraph": False}, "unknown field"),
    ([], "must be a dict")])
def test_a_surface_from_a_file_is_checked_field_by_field(data, words) -> None:
    with pytest.raises(CaseError, match=words):
        Surface.from_dict(data)


def test_the_surface_decides_the_compile_arguments_and_refuses_what_cannot_apply() -> None:
    assert Surface().compile_kwargs() == {"fullgraph": True, "dynamic": False, "mode": None}
    wide = Surface(dynamic=True, mode="max-autotune", training=True)
    assert wide.compile_kwargs() == {"fullgraph": True, "dynamic": True, "mode": "max-autotune"}
    assert wide.label() == "dynamic, max-autotune, training" and Surface().label() == "static"
    with pytest.raises(CaseError, match="needs a CUDA device"):
        Surface(mode="reduce-overhead").check_for("cpu", "inductor")
    with pytest.raises(CaseError, match="is a function"):
        Surface(mode="max-autotune").check_for("cpu", "tests.fakes:inject_inf")
    Surface(mode="reduce-overhead").check_for("cuda", "inductor")


def test_a_case_keeps_its_surface_and_only_a_non_default_one_changes_its_digest(
        tmp_path: Path) -> None:
    case, task = make_case(campaign_settings(out=tmp_path, seed=8), 0)
    case.inputs = task.draws[0]
    plain = case.digest()
    case.recipe = replace(case.recipe, surface=Surface(dynamic=True))
    assert case.digest() != plain
    loaded = Case.load(case.save(tmp_path / "c.pt"))
    assert loaded.recipe.surface == Surface(dynamic=True) and loaded.digest() == case.digest()
    case.recipe = replace(case.recipe, surface=Surface())
    assert case.digest() == plain  # older case files keep their names


def test_the_run_task_compiles_with_the_tasks_surface(monkeypatch, tmp_path: Path) -> None:
    seen: list[dict] = []
    real = torch.compile

    def recording(model, **kwargs):
        seen.append({k: kwargs[k] for k in ("dynamic", "mode", "fullgraph")})
        return real(model, **kwargs)

    monkeypatch.setattr(torch, "compile", recording)
    s = campaign_settings(out=tmp_path, seed=8, draws=1, backend="eager", dtypes=("float32",),
                          surface={"dynamic": True, "mode": "max-autotune-no-cudagraphs"})
    case, task = make_case(s, 1)
    assert task.recipe == case.recipe == s.recipe
    runner_module.run_task(task)
    assert seen == [{"dynamic": True, "mode": "max-autotune-no-cudagraphs", "fullgraph": True}]


def test_cli_refuses_a_surface_that_cannot_apply_in_one_line(tmp_path: Path) -> None:
    for args, words in ((["--mode", "reduce-overhead"], "needs a CUDA device"),
                        (["--inductor-config", "cpp.cxx=gcc"], "not an allowed numerics knob"),
                        (["--inductor-config", "freezing"], "KEY=VALUE"),
                        (["--inductor-config", "numerics=loose"], "cannot be 'loose'")):
        done = numfuzz("run", "--device", "cpu", "--cases", "1", "--out", str(tmp_path),
                       *args)
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_forward_backward_gives_outputs_then_each_float_inputs_gradient() -> None:
    x = torch.tensor([1.0, -2.0]).expand(3, 2)  # an expanded input keeps its layout
    w = torch.tensor([0.5, 3.0])
    n = torch.tensor([1, 2])
    got = calling.forward_backward(lambda a, b, k: ((a * b).sum(0), k + 1), [x, w, n])
    assert len(got) == 4  # two outputs, then the gradients of x and w (n is not a float)
    assert torch.equal(got[2], w.expand(3, 2)) and torch.equal(got[3], torch.full((2,), 3.0) *
                                                               torch.tensor([1.0, -2.0]))
    assert not x.requires_grad  # the caller's tensors are left as they were


def test_training_keeps_the_float_under_each_head_as_an_output(tmp_path: Path) -> None:
    s = campaign_settings(out=tmp_path, seed=8, dtypes=("float32",), surface={"training": True})
    case, _ = make_case(s, 0)
    graph = case.graph
    assert any(graph.node(o).dtype == "float32" for o in graph.outputs)
    assert for_training(graph).outputs == graph.outputs  # already there: nothing added twice


def test_a_backward_only_divergence_is_found_with_training_and_minimized(
        fake_runner, tmp_path: Path) -> None:
    def run(out: Path, surface: dict) -> Summary:
        return run_campaign(campaign_settings(
            out=out, cases=3, seed=8, draws=1, dtypes=("float32",), surface=surface,
            backend="tests.fakes:scaled_gradients", timeout=60,
            # elementwise programs: a conv chain's input gradient needs every conv of the chain,
            # so the minimizer keeps them (5 ops at seed 8 of the default mix)
            strategies={"special-functions": 1.0}))

    assert not run(tmp_path / "inference", {}).findings  # the forward is exact
    found = run(tmp_path / "training", {"training": True})
    assert found.findings.get("accuracy")
    case = Case.load(sorted((tmp_path / "training").glob("accuracy-*.pt"))[0])
    assert case.recipe.surface.training and "the gradient of input node" in case.verdict.summary()
    result = minimized(case, fake_runner, tmp_path, k=2, max_calls=80)
    assert result.reliability == (2, 2) and result.final_ops <= 2
    assert result.case.recipe.surface.training
    assert "the gradient of" in result.case.verdict.summary()


def test_a_dynamic_shape_divergence_survives_replay_minimize_and_repro(
        fake_runner, tmp_path: Path) -> None:
    s = campaign_settings(out=tmp_path / "corpus", cases=3, seed=8, draws=1,
                          dtypes=("float32",), backend="tests.fakes:nan_when_dynamic",
                          surface={"dynamic": True}, timeout=60,
                          strategies={"special-functions": 1.0})  # float outputs
    assert run_campaign(s).findings.get("nonfinite")
    case = Case.load(sorted((tmp_path / "corpus").glob("nonfinite-*.pt"))[0])
    assert replay_case(case, runner=fake_runner).verdict.kind == "nonfinite"
    static = Case.load(case.save(tmp_path / "static.pt"))
    static.recipe = replace(static.recipe, surface=Surface())
    assert replay_case(static, runner=fake_runner).verdict.kind == "ok"  # only dynamic shows it
    result = minimized(case, fake_runner, tmp_path, k=2, max_calls=60)
    assert result.case.recipe.surface.dynamic and result.reliability == (2, 2)
    static = result.case
    static.recipe = replace(static.recipe, surface=Surface())
    text = write_repro(static, tmp_path / "static").read_text()
    assert "'dynamic': False" in text
    assert run_repro(tmp_path / "static" / "repro.py").returncode == 0


def _first_finding(tmp_path: Path, search: str, cases: int) -> tuple[int | None, dict]:
    found: list[int] = []

    def note(outcome: Outcome) -> None:
        if outcome.verdict.is_finding and not found:
            found.append(outcome.index)

    summary = run_campaign(campaign_settings(
        out=tmp_path / search, cases=cases, seed=15, draws=1, dtypes=("float32",), workers=1,
        backend="tests.fakes:drift_per_nonlinearity", timeout=60, search=search,
        strategies={"special-functions": 1.0}), on_outcome=note)
    return (found[0] if found else None), summary.strategies


def test_guided_search_finds_a_narrow_planted_bug_in_fewer_cases_than_random(
        tmp_path: Path) -> None:
    """Seeded and one worker, so both campaigns are pure functions of the seed. The bug needs
    about five nonlinear calls in one graph; random draws rarely hold that many, while guided
    search mutates the graphs that came closest (tests.fakes.drift_per_nonlinearity)."""
    random_first, _ = _first_finding(tmp_path, "random", 40)
    guided_first, spent = _first_finding(tmp_path, "guided", 40)
    assert guided_first is not None and spent["guided"].cases > 0
    assert random_first is None or guided_first < random_first
    kept = [Case.load(p) for p in (tmp_path / "guided").glob("*.pt")]
    assert any(c.origin["strategy"] == "guided" and c.origin["parent_score"] > 0 for c in kept)


def test_the_score_is_the_ratio_the_float_rule_fires_at_and_counts_discrete_regressions() -> None:
    from fuzzer.judge.oracle import SCORE_CAP, judge_float, regression_score

    ref = torch.linspace(1, 2, 64, dtype=torch.float64)
    eager = ref.float()
    for drift, fires in ((5e-5, False), (1e-3, True)):
        compiled = (ref * (1 + drift)).float()
        score = regression_score(eager, compiled, ref, "float32")
        assert (score >= 1) == fires == (judge_float(eager, compiled, ref, "float32")[0] ==
                                         "accuracy"), score
    compiled = eager.clone()
    compiled[3] = float("inf")
    assert regression_score(eager, compiled, ref, "float32") == SCORE_CAP
    codes = torch.tensor([1, 2, 3, 4])
    assert regression_score(codes, codes, codes.double(), "int64") == 0.0
    assert regression_score(codes, codes + torch.tensor([0, 0, 0, 1]), codes.double(),
                            "int64") == 1.25


def test_real_inductor_compiles_forward_and_backward_and_every_gradient_is_judged(
        inductor_runner, tmp_path: Path) -> None:
    """What this torch does, reported as it is: the verdict may be ok or a finding, but each
    float input's gradient is judged, and the gradients reported as eager's are eager's."""
    s = campaign_settings(out=tmp_path, seed=8, draws=1, dtypes=("float32",),
                          surface={"training": True, "dynamic": True})
    case, task = make_case(s, 1)
    task.keep_outputs = True
    result = inductor_runner.run(task)
    verdict = result.verdict
    assert verdict.kind not in ("crash", "skip"), verdict.summary()
    graph = case.graph
    floats = [n for n in graph.input_ids() if graph.node(n).dtype == "float32"]
    judged = [o.details.gradient_of for o in verdict.outputs
              if o.details.gradient_of is not None]
    assert judged == floats
    model = runner_module.Programs.build(graph).model
    want = calling.forward_backward(model, [task.draws[0][str(n)] for n in graph.input_ids()])
    got = result.outputs["eager"]
    assert len(got) == len(graph.outputs) + len(floats) == len(want)
    for a, b in zip(got, want):  # the worker runs on one thread: reductions may round apart
        torch.testing.assert_close(a, b, equal_nan=True)

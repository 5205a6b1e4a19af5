"""A user's own model (issue 36): every model file loads, and numfuzz never calls clean what it did
not judge.

- A model file or case that could not be judged (a harness error, eager failing, a skip) exits 2
  on ``replay``, ``minimize`` and ``run --seed-model``, with the reason in one line and in
  ``--json``, and no ``same`` compares a verdict that was not made.
- The float64 reference is a second ``Model`` built under the same seed and converted, so
  closures over submodules, tied weights and shared blocks run in float64; every call starts
  from the state the model was built with.
- Stock layers that reach Dynamo's graph as functions torch.overrides does not list
  (``nn.Hardswish``) load through the generic call.
- A divergence that vanishes with ``emulate_precision_casts`` is ``expected``: counted, not a
  finding, not saved unless ``--keep-benign``.
- ``minimize`` takes ``--device``.

Model files live in tests/models/structure (the example models' folder is globbed elsewhere);
fake backends plant the behaviour (tests/fakes.py, tests/triage_fakes.py), and model files whose
command has no ``--backend`` are compiled with one by patching what their capture records.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fuzzer.cli import main
from fuzzer.corpus.case import Case
from fuzzer.execute.original import load_model_file, run_original
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import Task
from fuzzer.gen.grammar import Builder
from fuzzer.ir import generic, ops
from fuzzer.judge.kinds import COUNTED, Kind
from fuzzer.user.capture import Captured, capture_file
from tests import triage_fakes as tf

MODELS = Path(__file__).parent / "models" / "structure"
PLANT_UNLESS_EMULATE = "tests.triage_fakes:plant_unless_emulate"


def invoke(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.startswith("numfuzz:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.fixture
def compiled_with(monkeypatch: pytest.MonkeyPatch):
    """``replay`` and ``minimize`` of a model file have no ``--backend``: its captured case (and
    so the file's own run) is compiled with the backend given here instead of Inductor."""
    def use(backend: str) -> None:
        real = Captured.case

        def case(self: Captured, device: str = "auto") -> Case:
            made = real(self, device)
            made.recipe = Recipe(backend)
            return made

        monkeypatch.setattr(Captured, "case", case)

    return use


def own_task(name: str, backend: str = "eager", **recipe: object) -> Task:
    """The task that judges model file ``name`` as itself (``run_original``), as replay runs it."""
    path = MODELS / name
    case = capture_file(path).case("cpu")
    task = case.task(keep_outputs=True, recipe=Recipe(backend, dict(recipe)))
    task.model_file, task.seed = str(path.resolve()), 0
    return task


# ------------------------------------------------------------------ 1. never clean unjudged


def test_a_model_file_that_cannot_be_judged_exits_2_and_says_why(compiled_with) -> None:
    compiled_with("eager")
    target = str(MODELS / "plain_tensor_attribute.py")
    got = invoke("replay", target, "--device", "cpu", "--json")
    assert got.exit_code == 2, got.output
    report = json.loads(got.stdout)
    assert report["judged"] is False and report["verdict"]["kind"] == "skip"
    assert "same" not in report  # the file's verdict was not made: nothing to compare
    assert "float64 reference" in report["reason"] and "\n" not in report["reason"]
    line = one_line(got.stderr)
    assert "could not judge it, so it is not clean" in line and "float64 reference" in line

    shown = invoke("replay", target, "--device", "cpu")
    assert shown.exit_code == 2 and "could not judge" in one_line(shown.stderr)


def test_minimize_of_a_model_file_that_cannot_be_judged_exits_2(compiled_with,
                                                                tmp_path: Path) -> None:
    compiled_with("eager")
    got = invoke("minimize", str(MODELS / "plain_tensor_attribute.py"), "--device", "cpu",
                 "-o", str(tmp_path / "m"), "--corpus", str(tmp_path / "slips"), "--json")
    assert got.exit_code == 2, got.output  # not 3, "does not diverge"
    report = json.loads(got.stdout)
    assert report["judged"] is False and "float64 reference" in report["reason"]
    assert "could not judge it" in one_line(got.stderr)


@pytest.fixture(scope="module")
def skipping_case(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A case file recording a finding (made by uint8_plus_one) whose backend now skips every
    run (tests.fakes:graph_break): its replay judges nothing."""
    path = tmp_path_factory.mktemp("skip") / "case.pt"
    graph = tf.e8m0_graph()
    x = graph.input_ids()[0]
    inputs = {str(x): torch.tensor([0.3, 1.5, -2.0, 7.0])}
    from fuzzer.execute.workers import LocalRunner

    runner = LocalRunner("cpu", threads=1, timeout=60, warmup=False)
    try:
        case = tf.judged_case(graph, inputs, "tests.fakes:uint8_plus_one", runner)
    finally:
        runner.close()
    assert case.verdict.is_finding, case.verdict.summary()
    case.recipe = Recipe("tests.fakes:graph_break")
    return case.save(path)


def test_replay_and_minimize_of_a_case_that_only_skips_exit_2(skipping_case: Path,
                                                              tmp_path: Path) -> None:
    got = invoke("replay", str(skipping_case), "--json")
    assert got.exit_code == 2, got.output
    report = json.loads(got.stdout)
    assert report["judged"] is False and "graph break" in report["reason"]
    assert "graph break" in one_line(got.stderr)
    shrunk = invoke("minimize", str(skipping_case), "--device", "cpu", "-o", str(tmp_path / "m"),
                    "--corpus", str(tmp_path / "slips"), "--k", "2")
    assert shrunk.exit_code == 2, shrunk.output  # could not judge, not "does not reproduce" (3)
    assert "could not judge it" in one_line(shrunk.stderr)


@pytest.mark.parametrize("backend, config, kind", [
    ("gemm_choice_missing", {"max_autotune_gemm_backends": "CPP"}, Kind.SKIP),
    ("gemm_choice_missing", {}, Kind.CRASH),  # the campaign narrowed nothing: Inductor's refusal
    ("gemm_choices_fail", {"max_autotune_gemm_backends": "CPP"}, Kind.CRASH),
])
def test_a_gemm_outside_the_campaigns_gemm_backends_is_skipped_not_a_crash(
        fake_runner, backend: str, config: dict, kind: Kind) -> None:
    """``max_autotune_gemm_backends=CPP`` makes the C++ GEMM template the only choice, and
    Inductor refuses a GEMM it cannot take ("No choices exist"): the campaign's choice, so the
    case is not judged. Choices that exist and fail to compile are still a crash."""
    graph = tf.e8m0_graph()
    inputs = {str(graph.input_ids()[0]): torch.tensor([0.3, 1.5, -2.0, 7.0])}
    verdict = tf.judged_case(graph, inputs, f"tests.fakes:{backend}", fake_runner,
                             config).verdict
    assert verdict.kind == kind, verdict.summary()
    if kind == Kind.SKIP:
        assert "max_autotune_gemm_backends" in verdict.message


def test_a_seed_model_campaign_that_judges_nothing_exits_2(tmp_path: Path) -> None:
    got = invoke("run", "--seed-model", str(MODELS / "closure_tied_shared.py"), "--device", "cpu",
                 "--cases", "2", "--draws", "1", "--backend", "tests.fakes:graph_break",
                 "--out", str(tmp_path / "out"), "--json")
    assert got.exit_code == 2, got.output
    summary = json.loads(got.stdout)
    assert summary["cases"] == 2 and summary["judged"] == 0 and summary["findings"] == {}
    assert "graph break" in summary["reason"]
    line = one_line(got.stderr)
    assert "could not judge any of its 2 cases" in line and "graph break" in line


# ------------------------------------------------------------------ 2. the float64 reference


def test_closures_tied_weights_and_shared_blocks_run_in_float64() -> None:
    """The minGPT pattern (``self.mlpf = lambda x: m.proj(...)``): a deep copy's lambda still
    calls the float32 layers; the second instance's calls its own, converted ones."""
    result = run_original(own_task("closure_tied_shared.py"))
    assert result.verdict.kind == Kind.OK, result.verdict.summary()
    (eager,), (wide,) = result.outputs["eager"], result.outputs["fp64"]
    assert wide.dtype == torch.float64
    torch.testing.assert_close(wide.float(), eager, rtol=1e-5, atol=1e-6)


def test_the_float64_twin_has_the_judged_instances_values_and_its_own_structure() -> None:
    from fuzzer.execute.original import float64_twin

    loaded = load_model_file(MODELS / "closure_tied_shared.py")
    with torch.no_grad():
        loaded.model.mlp.fc.weight.fill_(0.25)  # changed after building: copied over by name
    twin = float64_twin(loaded)
    assert twin is not loaded.model
    assert torch.equal(twin.mlp.fc.weight, torch.full((8, 4), 0.25, dtype=torch.float64))
    assert twin.out.weight is twin.inp.weight  # still tied, in the twin
    x = loaded.inputs[0]
    torch.testing.assert_close(twin(x.double()).float(), loaded.model(x), rtol=1e-5,
                               atol=1e-6)


def test_a_forward_that_updates_its_buffer_is_judged_from_one_starting_state() -> None:
    """``scale`` doubles on every call: eager twice, compiled twice and float64 all see it as
    built (ones), as the capture does; else eager's two runs differ and float64 is another."""
    result = run_original(own_task("doubling_buffer.py"))
    x = load_model_file(MODELS / "doubling_buffer.py").inputs[0]
    assert result.verdict.kind == Kind.OK, result.verdict.summary()
    assert not result.verdict.outputs[0].details.unstable
    for side in ("eager", "compiled", "fp64"):
        assert torch.equal(result.outputs[side][0].float(), x), side


def test_a_forward_that_writes_its_input_is_judged_on_its_outputs() -> None:
    """Each call gets its own copy of the inputs, so the write is not numfuzz's harness error;
    the state it leaves is judged on the capture, which records the write."""
    result = run_original(own_task("writes_its_input.py"))
    assert result.verdict.kind == Kind.OK, result.verdict.summary()
    assert capture_file(MODELS / "writes_its_input.py").graph.written_inputs()


# ------------------------------------------------------------------ 3. every model loads


def test_hardswish_and_hardsigmoid_load_through_the_generic_call(tmp_path: Path) -> None:
    captured = capture_file(MODELS / "hardswish_gate.py")
    targets = {captured.graph.node(n).attrs.get("target") for n in captured.graph.op_ids()}
    assert {"F.hardswish", "F.hardsigmoid"} <= targets
    loaded = Case.load(captured.case("cpu").save(tmp_path / "case.pt"))  # a case file names them
    assert loaded.graph.to_dict() == captured.graph.to_dict()
    result = run_original(own_task("hardswish_gate.py"))
    assert result.verdict.kind == Kind.OK, result.verdict.summary()


@pytest.mark.parametrize("target", ["F.handle_torch_function", "F.boolean_dispatch",
                                    "torch.manual_seed", "torch.save"])
def test_the_unlisted_table_names_tensor_ops_only(target: str) -> None:
    with pytest.raises(ops.InvalidGraph):
        generic.resolve(target)


# ------------------------------------------------------------------ 4. expected by default


def roundtrip_graph(through: str | None = "float16"):
    """x -> (an fp16 round trip) -> * 3 -> e8m0: the uint8 head the planted backends bump."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    y = b.op("cast_roundtrip", x, to=through) if through else x
    b.graph.outputs = [b.op("e8m0", b.op("mul_scalar", y, value=3.0), eps=1e-30)]
    return b.graph, {str(x): torch.tensor([0.3, 1.5, -2.0, 7.0])}


def test_a_divergence_emulate_precision_casts_removes_is_expected(fake_runner) -> None:
    graph, inputs = roundtrip_graph()
    case = tf.judged_case(graph, inputs, PLANT_UNLESS_EMULATE, fake_runner)
    verdict = case.verdict
    assert verdict.kind == "expected" and not verdict.is_finding and verdict.kind in COUNTED
    assert "int-flip" in verdict.summary() and "emulate_precision_casts" in verdict.summary()


@pytest.mark.parametrize("backend, through, config", [
    ("tests.fakes:uint8_plus_one", "float16", {}),  # it survives the knob: a finding
    (PLANT_UNLESS_EMULATE, None, {}),  # no fp16/bf16 anywhere: the knob is not asked
    (PLANT_UNLESS_EMULATE, "bfloat16", {"emulate_precision_casts": False}),  # set by the user
])
def test_what_is_not_expected_stays_a_finding(fake_runner, backend: str, through: str | None,
                                              config: dict) -> None:
    graph, inputs = roundtrip_graph(through)
    case = tf.judged_case(graph, inputs, backend, fake_runner, config)
    assert case.verdict.kind == Kind.INT_FLIP, case.verdict.summary()


def test_a_model_files_own_verdict_is_expected_and_replay_says_so(fake_runner,
                                                                  compiled_with) -> None:
    own = fake_runner.run(own_task("fp16_roundtrip_head.py", PLANT_UNLESS_EMULATE)).verdict
    assert own.kind == "expected", own.summary()
    compiled_with(PLANT_UNLESS_EMULATE)
    got = invoke("replay", str(MODELS / "fp16_roundtrip_head.py"), "--device", "cpu", "--json")
    assert got.exit_code == 0, got.output  # judged, and not a finding
    report = json.loads(got.stdout)
    assert report["judged"] is True and report["verdict"]["kind"] == "expected"
    assert report["captured_verdict"]["kind"] == "expected" and report["same"] is True


def test_a_seed_model_campaign_counts_expected_apart_and_keeps_them_only_if_asked(
        tmp_path: Path) -> None:
    common = ["run", "--seed-model", str(MODELS / "fp16_roundtrip_head.py"), "--device", "cpu",
              "--cases", "3", "--draws", "1", "--backend", PLANT_UNLESS_EMULATE, "--json"]
    plain = invoke(*common, "--out", str(tmp_path / "plain"))
    assert plain.exit_code == 0, plain.output
    summary = json.loads(plain.stdout)
    assert summary["findings"] == {} and summary["not_findings"].get("expected", 0) >= 1
    assert list((tmp_path / "plain").glob("*.pt")) == []

    kept = invoke(*common, "--out", str(tmp_path / "kept"), "--keep-benign")
    assert kept.exit_code == 0, kept.output
    rows = json.loads(invoke("corpus", "list", str(tmp_path / "kept"), "--json").stdout)
    assert rows and {r["kind"] for r in rows} >= {"expected"}
    shown = invoke("replay", str(tmp_path / "kept" / next(r["file"] for r in rows
                                                          if r["kind"] == "expected")))
    assert shown.exit_code == 0 and "expected: " in shown.stdout


def test_a_stored_cause_now_expected_is_not_marked_fixed(fake_runner, tmp_path: Path) -> None:
    """A cause recorded before ``expected`` existed (its file says int-flip) rechecks as
    expected: it still diverges by default, so its status stays, and the recheck says why."""
    from fuzzer.execute.pool import RunnerPool
    from fuzzer.nightly.pipeline import finding_for
    from fuzzer.nightly.recheck import recheck
    from fuzzer.report.store import Store

    graph, inputs = roundtrip_graph()
    case = tf.judged_case(graph, inputs, "tests.fakes:uint8_plus_one", fake_runner)
    case.recipe = Recipe(PLANT_UNLESS_EMULATE)  # as an earlier numfuzz recorded it
    with Store.in_reports(tmp_path) as store:
        finding = finding_for(case, None, (1, 1))
        finding.case_path = str(case.save(tmp_path / "case.pt"))
        store.record(finding)
        (result,) = recheck(store, RunnerPool({"cpu": fake_runner}, warmup=False), k=2)
        (kept,) = store.findings()
    assert kept.status == "open" and result.after == "open", result
    assert "expected" in result.message


# ------------------------------------------------------------------ 5. minimize --device


def test_minimize_of_a_model_file_takes_device(compiled_with, tmp_path: Path) -> None:
    compiled_with("tests.fakes:uint8_plus_one")
    got = invoke("minimize", str(MODELS / "fp16_roundtrip_head.py"), "--device", "cpu",
                 "-o", str(tmp_path / "m"), "--corpus", str(tmp_path / "slips"), "--k", "1",
                 "--max-calls", "40", "--json")
    assert got.exit_code == 1, got.output
    assert Case.load(tmp_path / "m" / "case.pt").device == "cpu"

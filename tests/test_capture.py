"""A user's own model file: capture into the IR (bit for bit in eager), clear refusals, the same
divergence as the file itself, minimization of captured cases, and mutation around them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from fuzzer.corpus.case import Case, CaseError
from fuzzer.corpus.replay import replay_case
from fuzzer.errors import CaptureError
from fuzzer.execute.original import load_model_file
from fuzzer.gen import inputs
from fuzzer.gen.mutate import mutate
from fuzzer.ir import render
from fuzzer.ir.graph import Graph
from fuzzer.judge import oracle
from fuzzer.user.capture import capture_file
from fuzzer.user.verify import verify_capture
from tests.conftest import minimized, python, skip_on_this_torch

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "tests" / "models"
ALL_MODELS = sorted(MODELS.glob("*.py"))


def model_outputs(path: Path, seed: int = 0) -> list[torch.Tensor]:
    """What the file's own Model returns in eager, flattened: the ground truth for capture."""
    loaded = load_model_file(path, seed)
    out = loaded.model(*loaded.inputs)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def run_captured(graph: Graph, values: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    program = render.load(render.render_model(graph), "model")
    return list(program(*inputs.ordered(graph, values)))


# ---------------------------------------------------------------- capture is faithful


@pytest.mark.parametrize("path", ALL_MODELS, ids=lambda p: p.stem)
def test_captured_case_reproduces_the_models_eager_outputs_bit_for_bit(path: Path) -> None:
    captured = capture_file(path, seed=0)
    expected = model_outputs(path)
    got = run_captured(captured.graph, captured.inputs)
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert e.dtype == g.dtype and e.shape == g.shape
    assert oracle.bitwise_equal(expected, got)


@pytest.mark.parametrize("path", ALL_MODELS, ids=lambda p: p.stem)
def test_captured_case_survives_a_case_file_round_trip(path: Path, tmp_path: Path) -> None:
    case = capture_file(path, seed=0).case("cpu")
    loaded = Case.load(case.save(tmp_path / "c.pt"))
    assert loaded.graph.to_dict() == case.graph.to_dict()
    assert oracle.bitwise_equal(run_captured(loaded.graph, loaded.inputs),
                                run_captured(case.graph, case.inputs))
    assert loaded.origin["model_file"].endswith(path.name) and loaded.grammar == "user-model"


def test_same_seed_same_case_and_another_seed_another(tmp_path: Path) -> None:
    path = MODELS / "buffer_linear.py"
    a, b, c = (capture_file(path, seed).case("cpu") for seed in (0, 0, 1))
    assert a.digest() == b.digest()
    assert a.digest() != c.digest()


def test_weights_buffers_and_registry_ops_are_recognized() -> None:
    captured = capture_file(MODELS / "buffer_linear.py")
    g = captured.graph
    roles = {g.node(n).attrs.get("name"): g.node(n).attrs["role"] for n in g.input_ids()}
    assert roles == {"linear.weight": "w", "linear.bias": "w", "scale": "w", None: "x"}
    # registry ops where they render the same call; the rest stays generic and readable
    assert sorted(g.op_names()) == sorted(["linear", "mul", "torch.cumsum", "div_scalar",
                                           "Tensor.mean", "sub", "sign_int8", "tanh"])
    assert captured.generic_ops == 2
    assert "torch.cumsum(" in render.render_model(g)


def test_written_out_e8m0_becomes_the_registry_head() -> None:
    """The fused head knows its discontinuity, so findings carry ulps from the boundary."""
    g = capture_file(MODELS / "conv_gelu_e8m0.py").graph
    head = g.node(g.outputs[0])
    assert head.op == "e8m0" and head.attrs == {"eps": 1e-30}
    assert "erf" in g.op_names() and "conv2d" in g.op_names()


def test_attention_block_keeps_multi_output_and_factory_ops() -> None:
    g = capture_file(MODELS / "attention_block.py").graph
    names = g.op_names()
    assert names.count("Tensor.chunk") == 3  # one node per chunk used, each picking its part
    assert "softmax" in names and "Tensor.masked_fill" in names
    assert not [n for n in g.input_ids() if g.node(n).dtype == "bool"]  # no folded mask
    assert "torch.ones" in names  # the factory stays a call: its compiled kernel is tested too


def test_a_bug_in_a_compiled_factory_survives_capture() -> None:
    """torch.arange(..., device=x.device) * 1.5e9 (pytorch#175966): were the factory folded into
    a constant, the product would no longer be computed by the compiled kernel."""
    g = capture_file(MODELS / "public" / "arange_int64_mul_wrap.py").graph
    (factory,) = [n for n in g.op_ids() if g.node(n).op == "call"
                  and g.node(n).attrs["target"] == "torch.arange"]
    assert g.node(factory).attrs["kwargs"]["device"] == {"device_of": 0}
    assert len(g.input_ids()) == 1  # only the user's input; no constant stands in for arange


# ---------------------------------------------------------------- clear refusals


BAD_FILES = {
    "no_model.py": ("import torch\ndef get_inputs():\n    return [torch.ones(2)]\n",
                    "KernelBench convention"),
    "syntax.py": ("def broken(:\n", "importing it failed"),
    "not_tensor.py": ("import torch\nclass Model(torch.nn.Module):\n"
                      "    def forward(self, x):\n        return x * 2\n"
                      "def get_inputs():\n    return [3]\n", "item 0 is a int"),
    "graph_break.py": ("import torch\nclass Model(torch.nn.Module):\n"
                       "    def forward(self, x):\n"
                       "        if x.sum().item() > 0:\n            return x * 2\n"
                       "        return x\n"
                       "def get_inputs():\n    return [torch.ones(4)]\n", "one graph"),
    "random_forward.py": ("import torch\nclass Model(torch.nn.Module):\n"
                          "    def forward(self, x):\n        return x + torch.randn(4)\n"
                          "def get_inputs():\n    return [torch.ones(4)]\n", "bit for bit"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_nonconforming_file_is_one_line_and_exit_2(name: str, tmp_path: Path) -> None:
    source, expected = BAD_FILES[name]
    path = tmp_path / name
    path.write_text(source)
    with pytest.raises(CaptureError, match=expected):
        capture_file(path)
    proc = python("-m", "fuzzer", "replay", path, cwd=REPO, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("numfuzz: error:") and expected in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("target", ["os.system", "torch.save", "builtins.eval", "Tensor.tolist",
                                    "torch.hub.load"])
def test_a_case_file_naming_a_non_tensor_op_is_refused(target: str, tmp_path: Path) -> None:
    case = capture_file(MODELS / "buffer_linear.py").case("cpu")
    data = case.to_dict()
    for node in data["graph"]["nodes"]:
        if node["op"] == "call":
            node["attrs"]["target"] = target
    path = tmp_path / "hostile.pt"
    torch.save(data, path)
    with pytest.raises(CaseError, match="not a tensor op"):
        Case.load(path)


# ---------------------------------------------------------------- same divergence, minimized


def captured_with(path: Path, backend: str) -> Case:
    case = capture_file(path, seed=0).case("cpu")
    case.recipe = case.recipe.with_knob(backend=backend)
    return case


def test_planted_divergence_in_a_file_is_the_same_in_its_capture(fake_runner) -> None:
    path = MODELS / "erf_saturation.py"
    check = verify_capture(captured_with(path, "tests.fakes:erf_quarter"), fake_runner)
    assert check.reproduces, check.message
    assert check.original.kind == check.case.verdict.kind == "int-flip"
    assert check.original.output == check.case.verdict.output == 0
    assert "same divergence" in check.message


def test_a_file_that_does_not_diverge_is_told_so(fake_runner) -> None:
    check = verify_capture(captured_with(MODELS / "buffer_linear.py", "eager"), fake_runner)
    assert not check.reproduces and "does not diverge" in check.message


def test_planted_divergence_in_a_captured_model_minimizes_to_a_few_ops(fake_runner,
                                                                       tmp_path) -> None:
    check = verify_capture(captured_with(MODELS / "erf_saturation.py", "tests.fakes:erf_quarter"),
                           fake_runner)
    result = minimized(check.case, fake_runner, tmp_path)
    assert result.original_ops == 13
    assert result.case.graph.op_names() == ["erf", "e8m0"]
    assert result.reliability == (3, 3)


def test_generic_ops_go_through_the_minimizer(fake_runner, tmp_path) -> None:
    """A nonfinite planted on the float output of a model full of generic calls still shrinks."""
    case = capture_file(MODELS / "attention_block.py").case("cpu")
    case.recipe = case.recipe.with_knob(backend="tests.fakes:inject_inf")
    case.verdict = replay_case(case, runner=fake_runner).verdict
    assert case.verdict.kind == "nonfinite"
    result = minimized(case, fake_runner, tmp_path)
    assert result.final_ops <= 2 < result.original_ops


@pytest.mark.inductor
def test_real_inductor_divergence_in_a_model_file_minimizes_end_to_end(tmp_path) -> None:
    """Float floor division codes summed (upstream #197895, open, a strong regression on
    Inductor CPU on 2.11, 2.13 and 2.15): captured, minimized, and its repro reproduces."""
    model = MODELS / "floordiv_codes_sum.py"
    out = tmp_path / "min"
    proc = python("-m", "fuzzer", "minimize", model, "-o", out, "--corpus", tmp_path / "slips",
                  "--json", cwd=REPO, timeout=900)
    if proc.returncode == 2 and "does not diverge" in proc.stderr:
        skip_on_this_torch(f"fixed: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 1, proc.stderr[-2000:]  # 1: the minimized case reproduces k/k
    assert "same divergence as Model itself" in (out / "minimize.log").read_text()
    report = json.loads(proc.stdout)
    assert report["verdict"]["kind"] == "int-flip"
    minimized = Case.load(out / "case.pt")
    assert len(minimized.graph) <= 4 and minimized.graph.op_names()[-1] == "Tensor.sum"
    repro = python(out / "repro.py", timeout=300)
    assert repro.returncode == 1, repro.stdout + repro.stderr
    imports = [ln for ln in (out / "repro.py").read_text().splitlines()
               if ln.startswith(("import", "from"))]
    stdlib = ("import contextlib", "import os", "import sys")
    assert all("torch" in ln or ln in stdlib for ln in imports)


# ---------------------------------------------------------------- mutation


@pytest.mark.parametrize("path", ALL_MODELS, ids=lambda p: p.stem)
def test_mutants_are_valid_runnable_and_deterministic(path: Path) -> None:
    captured = capture_file(path)
    seen = set()
    for seed in range(12):
        mutant = mutate(captured.graph, seed)
        assert mutant.to_dict() == mutate(captured.graph, seed).to_dict()
        again = Graph.from_dict(mutant.to_dict())  # every shape/dtype rule re-checked
        seen.add(again.digest())
        program = render.load(render.render_model(mutant), "model")
        for _magnitude, values in inputs.draws_around(mutant, captured.inputs, seed, 4):
            outs = program(*inputs.ordered(mutant, values))
            assert len(outs) == len(mutant.outputs)
    assert captured.graph.digest() not in seen and len(seen) >= 8


def test_first_draw_is_the_users_own_data() -> None:
    captured = capture_file(MODELS / "conv_gelu_e8m0.py")
    mutant = mutate(captured.graph, 5)
    (magnitude, first), *rest = inputs.draws_around(mutant, captured.inputs, 5, 4)
    assert magnitude == "user"
    for key, value in captured.inputs.items():
        if key in first:
            assert torch.equal(first[key], value)
    x = str(next(n for n in captured.graph.input_ids()
                 if captured.graph.node(n).attrs["role"] == "x"))
    assert any(not torch.equal(values[x], first[x]) for _, values in rest)


def test_seed_model_campaign_saves_mutant_findings(tmp_path: Path) -> None:
    """run --seed-model with a planted erf bug: findings are mutants of the user's graph."""
    out = tmp_path / "corpus"
    proc = python("-m", "fuzzer", "run", "--seed-model", MODELS / "erf_saturation.py",
                  "--backend", "tests.fakes:erf_quarter", "--cases", "4", "--device", "cpu",
                  "--out", out, "--json", cwd=REPO)
    assert proc.returncode == 1, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["cases"] == 4 and summary["findings"].get("int-flip", 0) >= 1
    for path in out.glob("*.pt"):
        case = Case.load(path)
        assert case.grammar == "mutant" and case.origin["seed_model"].endswith("erf_saturation.py")
        assert "erf" in case.graph.op_names()


def test_models_directory_files_follow_the_convention() -> None:
    for path in ALL_MODELS:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert issubclass(module.Model, torch.nn.Module) and callable(module.get_inputs)


def test_triage_signature_and_draft_work_on_a_captured_case(fake_runner, tmp_path) -> None:
    """Generic calls flow through attribution, signatures and the pt2-style draft."""
    from fuzzer.execute.pool import RunnerPool
    from fuzzer.reduce.snippet import plain_repro
    from fuzzer.report import draft
    from fuzzer.report.store import Finding
    from fuzzer.triage.attribute import attribute, knob_named
    from fuzzer.triage.signature import signature

    cases = []
    for name in ("attention_block.py", "buffer_linear.py"):
        case = capture_file(MODELS / name).case("cpu")
        case.recipe = case.recipe.with_knob(backend="tests.fakes:inject_inf")
        case.verdict = replay_case(case, runner=fake_runner).verdict
        cases.append(case)
    case = cases[0]
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    attribution = attribute(case, pool, [knob_named("backend=aot_eager")])
    assert attribution.reproduces and attribution.vanishing() == ["backend=aot_eager"]
    sig = signature(case, attribution)
    assert sig == signature(Case.from_dict(case.to_dict()), attribution)
    assert sig != signature(cases[1], attribution)
    title = draft.title_for(case)
    assert title.startswith("[inject_inf][cpu] ") and " gives inf under torch.compile" in title
    finding = Finding(signature=sig, kind="nonfinite", device="cpu", dtype=case.dtype,
                      op_chain="", title=title, reliability=(3, 3), hits=1,
                      first_seen="2030-01-01T01:00:00Z", last_seen="2030-01-01T01:00:00Z",
                      versions=[("2.13.0+cpu", "none")])
    plain = plain_repro(case, fake_runner, tmp_path, sig)
    assert ".chunk(" in plain.source  # the generic calls, rendered as the worker ran them
    text = draft.render_draft(draft.Cause(finding, case, attribution, plain, (
        0, "(0,) eager 1.0 compiled inf float64 1.0"), "PyTorch version: test"),
        tmp_path / "d.md")
    assert "it shows the divergence" in text

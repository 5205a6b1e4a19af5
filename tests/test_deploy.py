"""The path models ship on (issue 51): torch.export and AOTInductor as surfaces. Fakes stand in
for a stage (``execute.calling.Deployed``): an export that drops a buffer write, a package that
loads a constant wrong, an export that refuses, a package build that fails; each is found, judged
like every case (outputs and the state left behind) and attributed to its stage. One small real
AOTInductor run, of a model file on the ``aoti`` surface."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from fuzzer.corpus.case import Case
from fuzzer.corpus.replay import replay_case
from fuzzer.execute import calling, surface
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import Task
from fuzzer.gen.grammar import Builder
from fuzzer.ir.graph import Graph
from fuzzer.judge import semantics
from fuzzer.judge.kinds import Kind
from fuzzer.reduce.repro import write_repro
from fuzzer.reduce.snippet import snippet_source
from fuzzer.triage.signature import signature_fields
from tests import triage_fakes as tf
from tests.conftest import python, run_repro

ROOT = Path(__file__).resolve().parents[1]


def on(path: str, backend: str) -> Recipe:
    return Recipe(backend).on(surface.CATALOGUE[path])


def running_mean() -> tuple[Graph, dict[str, torch.Tensor]]:
    """A module with a weight and a buffer it updates in place: ``out = x * w``,
    ``mean.mul_(0.9).add_(x * 0.1)``."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4, 8))
    w = b.input((4, 8), role="w", state="param")
    mean = b.input((4, 8), role="mean", state="buffer")
    out = b.op("mul", x, w)
    scaled = b.op("mul_scalar", x, value=0.1)
    decayed = b.op("mul_scalar_", mean, value=0.9)
    b.op("add_", decayed, scaled)
    b.graph.outputs = [out]
    gen = torch.Generator().manual_seed(1)
    return b.graph, {str(n): torch.randn(4, 8, generator=gen) for n in (x, w, mean)}


def judged(graph: Graph, inputs: dict, recipe: Recipe, runner) -> Case:
    verdict = runner.run(Task(graph=graph, draws=[inputs], recipe=recipe)).verdict
    return Case(graph=graph, inputs=inputs, recipe=recipe, verdict=verdict)


def test_an_export_that_drops_a_buffer_write_is_a_wrong_state_found_in_export(
        fake_runner, tmp_path) -> None:
    graph, inputs = running_mean()
    assert semantics.kinds(graph)[1:] == ["param", "buffer"] and graph.written_inputs()
    clean = judged(graph, inputs, on("export", "tests.fakes:package_perturbs_a_constant"),
                   fake_runner)
    assert not clean.verdict.is_finding, clean.verdict.summary()  # export hands state back
    case = judged(graph, inputs, on("export", "tests.fakes:export_drops_buffer_writes"),
                  fake_runner)
    assert case.verdict.is_finding and "after the call" in case.verdict.summary(), \
        case.verdict.summary()
    attribution = tf.attributed(case, fake_runner)
    assert attribution.stage() == "export (tracing and functionalization)", attribution.knobs
    assert signature_fields(case, attribution)["stage"] == attribution.stage()
    back = Case.load(case.save(tmp_path / "case.pt"))
    assert back.recipe.surface.path == "export"
    assert replay_case(back).verdict.is_finding
    done = run_repro(write_repro(back, tmp_path / "repro"))
    assert done.returncode == 1, done.stdout + done.stderr
    snippet = snippet_source(back, {"x0": "x0", "p1": "p1", "p2": "p2"})
    assert "ep = torch.export.export(c, (x0,))" in snippet and "ep.run_decompositions()" in \
        snippet


def test_a_package_that_loads_a_constant_wrong_is_found_in_aotinductor_alone(
        fake_runner) -> None:
    graph, inputs = running_mean()
    case = judged(graph, inputs, on("aoti", "tests.fakes:package_perturbs_a_constant"),
                  fake_runner)
    assert case.verdict.kind == Kind.ACCURACY, case.verdict.summary()
    # the package keeps the buffer it writes: not judged, and said so
    assert "not judged: an AOTInductor package keeps the buffers" in case.verdict.message
    attribution = tf.attributed(case, fake_runner)
    assert attribution.stage().startswith("AOTInductor's own"), attribution.knobs
    assert [k.outcome for k in attribution.knobs if k.knob.startswith("stage:")] == \
        ["vanishes"] * 3


def test_export_refusing_a_program_is_a_counted_skip_not_a_finding(fake_runner) -> None:
    graph, inputs = running_mean()
    verdict = fake_runner.run(Task(graph=graph, draws=[inputs],
                                   recipe=on("export", "tests.fakes:export_refuses"))).verdict
    assert verdict.kind == Kind.SKIP and verdict.message.startswith("export refused: UserError")


def test_a_stage_that_fails_on_a_program_every_earlier_stage_runs_is_a_crash(fake_runner):
    graph, inputs = running_mean()
    case = judged(graph, inputs, on("aoti", "tests.fakes:package_fails_to_build"), fake_runner)
    assert case.verdict.kind == Kind.CRASH and "package build failed" in case.verdict.message
    fields = signature_fields(case, tf.attributed(case, fake_runner))
    assert fields["error"][0] == "RuntimeError" and fields["stage"].startswith("AOTInductor")


def test_weights_in_one_flat_buffer_are_views_of_one_storage() -> None:
    kinds = ["x", "param:0", "param:0", "buffer"]
    state = [torch.ones(2, 3), torch.full((4,), 2.0), torch.zeros(2)]
    module = calling.Module(lambda *a: a, kinds, state)
    assert module.s1.untyped_storage().data_ptr() == module.s2.untyped_storage().data_ptr()
    assert module.s2.storage_offset() == 6 and torch.equal(module.s2, state[1])
    assert module.s3.untyped_storage().data_ptr() != module.s1.untyped_storage().data_ptr()


def test_a_deployed_case_keeps_one_set_of_weights_across_its_draws(tmp_path) -> None:
    from fuzzer.campaign.arms import plan
    from fuzzer.campaign.settings import make_case
    from tests.conftest import campaign_settings

    settings = campaign_settings(out=tmp_path, seed=4, strategies={"models": 1.0},
                                 plan=plan([surface.CATALOGUE["aoti"]], {"models": 1.0}))
    for i in range(6):
        case, task = make_case(settings, i)
        state = [str(n) for n in case.graph.input_ids() if case.graph.node(n).attrs.get("state")]
        for key in state:  # one package per case: its constants are the first draw's
            assert all(torch.equal(d[key], task.draws[0][key]) for d in task.draws)


@pytest.mark.inductor
def test_a_model_file_runs_through_a_real_aotinductor_package(tmp_path) -> None:
    """A small Linear + ReLU model file: exported, built into a package with its weights as
    constants, loaded and judged; it agrees with eager (``replay`` exits 0)."""
    model = tmp_path / "small.py"
    model.write_text("import torch\n\n\nclass Model(torch.nn.Module):\n"
                     "    def __init__(self):\n        super().__init__()\n"
                     "        self.fc = torch.nn.Linear(8, 4)\n\n"
                     "    def forward(self, x):\n        return torch.relu(self.fc(x))\n\n\n"
                     "def get_inputs():\n    return [torch.randn(2, 8)]\n")
    done = python("-m", "fuzzer", "replay", str(model), "--surface", "aoti", "--json",
                  cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["judged"] and report["verdict"]["kind"] in ("ok", "benign"), report
    assert report["surface"]["path"] == "aoti"  # which path judged it


def test_a_package_is_handed_back_only_the_buffers_the_program_writes() -> None:
    """A package holds its buffers' values from its build; before each call only the buffers
    the program writes are loaded again (a strided read-only buffer handed back in changed what
    a package computed: FINDINGS N22). A module that does not say hands in all, as before."""
    class Package:
        def __init__(self) -> None:
            self.loaded: list[list[str]] = []

        def get_constant_fqns(self) -> list[str]:
            return ["s1", "s2"]

        def load_constants(self, constants: dict, check_full_update: bool) -> None:
            self.loaded.append(sorted(constants))

    def program(x, read, state):
        state.add_(1)
        return (x + read + state,)

    for written, handed in (([2], [["s2"]]), ([], [])):
        seen: dict = {}

        def compile(module, seen=seen):
            deployed = calling.Deployed(module, surface.deployment("aoti").how())
            deployed.target, deployed.holder = module, Package()
            seen["deployed"] = deployed
            return deployed

        run = calling.module_program(program, ["x", "buffer", "buffer"], written, compile)
        run(torch.ones(2), torch.ones(2), torch.zeros(2))
        assert seen["deployed"].holder.loaded == handed, written
    plain = calling.Deployed(calling.Forward(lambda x: (x,)), surface.deployment("aoti").how())
    plain.holder = Package()
    plain.module.register_buffer("s1", torch.ones(1))
    plain._hand_in()
    assert plain.holder.loaded == [["s1"]]

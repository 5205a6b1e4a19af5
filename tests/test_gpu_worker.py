"""The CUDA path in the worker, tested on the CPU with fakes (issue 27): a sticky CUDA error is a
crash and costs its worker, out of memory is a counted skip, torch.backends flags are recorded,
pinned and varied by triage, eager's attention backend is recorded, pinned and re-pinned to math,
and a knob the installed torch lacks is reported as such all the way to the draft."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest
import torch
from click.testing import CliRunner

from fuzzer.campaign.local import run_campaign
from fuzzer.campaign.loop import Outcome, Summary
from fuzzer.campaign.settings import make_case
from fuzzer.cli.common import main
from fuzzer.corpus.case import Case
from fuzzer.errors import CaseError
from fuzzer.execute.flags import Flags
from fuzzer.execute.pool import RunnerPool
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import Task
from fuzzer.gen.grammar import Builder
from fuzzer.judge.kinds import Kind
from fuzzer.reduce.repro import repro_source, write_repro
from fuzzer.report.draft import ablation
from fuzzer.triage import attribute
from fuzzer.triage.attribute import Knob, flip, knob_named
from fuzzer.triage.attribute import attribute as attribute_case
from tests import gpu_fakes
from tests import triage_fakes as tf
from tests.conftest import campaign_settings, run_repro

TARGETED = torch.tensor([0.3, 1.5, -2.0, 7.0])  # 4 elements: gpu_fakes.targeted
SPARED = torch.tensor([0.3, 1.5, -2.0, 7.0, 0.5])


def e8m0_case(backend: str, runner, values: torch.Tensor = SPARED,
              recipe: Recipe | None = None, device: str = "cpu") -> Case:
    graph = tf.e8m0_graph(size=values.numel())
    inputs = {str(graph.input_ids()[0]): values}
    recipe = recipe or Recipe(backend)
    verdict = runner.run(Task(graph=graph, draws=[inputs], recipe=recipe,
                              device=device)).verdict
    return Case(graph=graph, inputs=inputs, device=device, recipe=recipe, verdict=verdict)


# ------------------------------------------------------------------ CUDA errors


@pytest.mark.parametrize("backend, error, kind", [
    ("tests.gpu_fakes:illegal_memory_access", "AcceleratorError: CUDA error: an illegal memory",
     Kind.MEMORY),  # a kernel outside its buffers: memory-unsafe, its own kind
    ("tests.gpu_fakes:device_side_assert", "RuntimeError: CUDA error: device-side assert",
     Kind.CRASH),
])
def test_a_sticky_cuda_error_is_a_finding_and_its_worker_is_replaced(fake_runner, backend,
                                                                     error, kind) -> None:
    replaced = fake_runner.replaced
    hit = e8m0_case(backend, fake_runner, TARGETED)
    assert hit.verdict.kind == kind and hit.verdict.message.startswith(error), \
        hit.verdict.summary()
    assert fake_runner.replaced == replaced + 1 and fake_runner.worker is None
    after = e8m0_case(backend, fake_runner)  # the poisoned process is gone: a clean run
    assert after.verdict.kind == Kind.OK, after.verdict.summary()


def test_out_of_memory_is_a_counted_skip_with_a_hint_and_the_worker_stays(fake_runner) -> None:
    replaced = fake_runner.replaced
    hit = e8m0_case("tests.gpu_fakes:out_of_memory", fake_runner, TARGETED)
    assert hit.verdict.kind == Kind.SKIP and hit.verdict.message.startswith("out of memory: "), \
        hit.verdict.summary()
    assert "--workers" in hit.verdict.message
    assert fake_runner.replaced == replaced and fake_runner.worker is not None
    summary = Summary()
    for i, case in enumerate((hit, e8m0_case("tests.gpu_fakes:out_of_memory", fake_runner))):
        summary.add(Outcome(i, case.verdict, None, False))
    data = summary.to_dict()
    assert (data["skipped"], data["out_of_memory"], len(data["hints"])) == (1, 1, 1)


def test_a_kernel_out_of_resources_is_a_crash_not_an_out_of_memory_skip(fake_runner) -> None:
    hit = e8m0_case("tests.gpu_fakes:out_of_resource", fake_runner)
    assert hit.verdict.kind == Kind.CRASH and "out of resource" in hit.verdict.message


def test_a_campaign_goes_on_past_sticky_cuda_errors(tmp_path) -> None:
    """Every targeted case is a memory-unsafe finding naming the CUDA error, no other case
    is: each poisoned worker was replaced. Without that, every case after the first hit would
    fail."""
    settings = campaign_settings(out=tmp_path, device="cpu", cases=10, seed=3, draws=1,
                                 dtypes=("float32",), workers=1,
                                 backend="tests.gpu_fakes:illegal_memory_access")
    hit = {i for i in range(10)
           if gpu_fakes.targeted(list(make_case(settings, i)[1].draws[0].values()))}
    assert hit and min(hit) < 9 and set(range(min(hit), 10)) - hit, hit  # spared cases after one
    seen: dict[int, Kind] = {}
    summary = run_campaign(settings, on_outcome=lambda o: seen.__setitem__(o.index,
                                                                           o.verdict.kind))
    assert summary.cases == 10 and summary.harness_errors == 0, summary.to_dict()
    crashed = {i for i, kind in seen.items() if kind == Kind.MEMORY}
    skipped = {i for i, kind in seen.items() if kind == Kind.SKIP}  # eager itself failed
    assert crashed == hit - skipped, (crashed, hit, seen)
    for path in summary.paths:
        assert "illegal memory access" in Case.load(path).verdict.message


# ------------------------------------------------------------------ torch.backends flags


def test_the_worker_pins_the_recipes_flags_before_every_run(fake_runner) -> None:
    backend = "tests.gpu_fakes:plant_if_tf32"
    assert e8m0_case(backend, fake_runner).verdict.kind == Kind.INT_FLIP  # cuDNN TF32: default
    off = Recipe(backend, flags=Flags(cudnn_tf32=False))
    assert e8m0_case(backend, fake_runner, recipe=off).verdict.kind == Kind.OK
    unrecorded = Recipe(backend, flags=None)  # an older case: the flags the worker started with
    assert e8m0_case(backend, fake_runner, recipe=unrecorded).verdict.kind == Kind.INT_FLIP


def test_tf32_off_is_a_triage_knob_on_cuda(fake_runner) -> None:
    case = e8m0_case("tests.gpu_fakes:plant_if_tf32", fake_runner)
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    knob = knob_named("tf32=off")
    assert flip(case, knob, pool).outcome == "n/a"  # CUDA only: this case is a CPU one
    anywhere = dataclasses.replace(knob, devices=("cpu", "cuda"))
    assert flip(case, anywhere, pool).outcome == "vanishes"
    case.recipe = Recipe(case.recipe.backend, flags=Flags(cudnn_tf32=False))
    assert flip(case, anywhere, pool).verdict == "already so in this case"


def test_flags_are_recorded_in_case_files_and_only_non_default_ones_change_the_digest(
        tmp_path) -> None:
    graph = tf.e8m0_graph()
    inputs = {str(graph.input_ids()[0]): TARGETED}
    case = Case(graph=graph, inputs=inputs, recipe=Recipe(flags=Flags(matmul_tf32=True)))
    loaded = Case.load(case.save(tmp_path / "case.pt"))
    assert loaded.recipe.flags == Flags(matmul_tf32=True)
    older = case.to_dict()
    del older["flags"]  # a case file written before flags were recorded
    old = Case.from_dict(older)
    assert old.recipe.flags is None
    default = Case(graph=graph, inputs=inputs)
    assert old.digest() == default.digest() != case.digest()
    for bad in ({"matmul_tf32": 1}, {"allow_tf64": True}, {"eager_sdpa": "FAST"}, "tf32"):
        with pytest.raises(CaseError):
            Case.from_dict({**case.to_dict(), "flags": bad})


# ------------------------------------------------------------------ attention backends


def sdpa_graph(dtype: str = "float32"):
    """q, k, v -> scaled_dot_product_attention -> an E8M0 head."""
    b = Builder(random.Random(0), dtype)
    q, k, v = (b.input((1, 2, 4, 8)) for _ in range(3))
    attention = b.op("sdpa", q, k, v, causal=False, scale=0.3)
    b.graph.outputs = [b.op("e8m0", attention, eps=1e-30)]
    gen = torch.Generator().manual_seed(0)
    inputs = {str(n): torch.randn(1, 2, 4, 8, generator=gen).to(getattr(torch, dtype))
              for n in b.graph.input_ids()}
    return b.graph, inputs


def sdpa_case(recipe: Recipe, runner) -> Case:
    graph, inputs = sdpa_graph()
    verdict = runner.run(Task(graph=graph, draws=[inputs], recipe=recipe)).verdict
    return Case(graph=graph, inputs=inputs, recipe=recipe, verdict=verdict)


def eager_choice(inputs: dict) -> str:
    """What this torch's SDPA picks for these tensors, asked directly."""
    from torch.nn.attention import SDPBackend

    q, k, v = inputs.values()
    return SDPBackend(torch._fused_sdp_choice(q, k, v, scale=0.3)).name


def test_eager_attention_backend_is_recorded_and_math_is_a_triage_knob(fake_runner) -> None:
    case = sdpa_case(Recipe("tests.fakes:uint8_plus_one"), fake_runner)
    assert case.verdict.kind == Kind.INT_FLIP
    assert case.verdict.sdpa == [eager_choice(case.inputs)], case.verdict.sdpa
    on_math = case.recipe.with_knob(flags={"eager_sdpa": "MATH"})
    assert fake_runner.run(case.task(recipe=on_math)).verdict.sdpa == ["MATH"]
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    knob = knob_named("eager_sdpa=math")
    expected = "n/a" if case.verdict.sdpa == ["MATH"] else "persists"  # +1 is worse than both
    assert flip(case, knob, pool).outcome == expected
    plain = e8m0_case("tests.fakes:uint8_plus_one", fake_runner)
    assert flip(plain, knob, pool).verdict == "eager ran no scaled_dot_product_attention"


def test_repro_pins_the_flags_and_the_attention_backend(fake_runner, tmp_path) -> None:
    """Cuda matmul TF32 is off by default: the repro diverges only if it pins the case's on."""
    recipe = Recipe("tests.gpu_fakes:plant_if_matmul_tf32", flags=Flags(matmul_tf32=True))
    case = sdpa_case(recipe, fake_runner)
    assert case.verdict.kind == Kind.INT_FLIP, case.verdict.summary()
    source = repro_source(case, tmp_path)
    assert "    torch.backends.cuda.matmul.allow_tf32 = True\n" in source
    assert f"SDPA = {[eager_choice(case.inputs)]!r}" in source
    done = run_repro(write_repro(case, tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    case.recipe = dataclasses.replace(recipe, flags=None)
    assert "not recorded for this case" in repro_source(case, tmp_path)


# ------------------------------------------------------------------ knobs this torch lacks


ABSENT = Knob("eager_numerics.from_the_future", {"eager_numerics.from_the_future": True},
              why="a knob no torch has (the test's)")


def test_a_knob_this_torch_lacks_is_reported_through_triage_and_the_draft(
        fake_runner, tmp_path, monkeypatch) -> None:
    case = e8m0_case("tests.fakes:uint8_plus_one", fake_runner)
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    result = attribute_case(case, pool, [ABSENT, knob_named("backend=aot_eager")])
    (absent, aot) = result.knobs
    assert (absent.outcome, absent.verdict) == \
        ("n/a", "not in this torch (eager_numerics.from_the_future)")
    assert aot.outcome == "vanishes"
    assert "Not applicable here: `eager_numerics.from_the_future` (not in this torch " in \
        ablation(result)

    monkeypatch.setattr(attribute, "KNOBS", (*attribute.KNOBS, ABSENT))
    path = case.save(tmp_path / "case.pt")
    done = CliRunner().invoke(main, ["triage", str(path), "--knobs", ABSENT.name,
                                     "--no-bisect", "--json"])
    assert done.exit_code == 0, done.output
    (knob,) = json.loads(done.output)["attribution"]["knobs"]
    assert knob["outcome"] == "n/a" and knob["verdict"].startswith("not in this torch")

"""The CUDA path end to end; every test here is marked ``cuda`` and skips without a CUDA device
(conftest). ``bench/gpu_smoke.sh`` runs them on a lent GPU machine, with the rest of a GPU run.
Their CPU twins, on fakes, are tests/test_gpu_numerics.py and tests/test_gpu_worker.py: here the
CUDA errors, CUDA graphs, TF32 and attention kernels are the GPU's own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzzer.campaign.local import run_campaign
from fuzzer.corpus.case import Case
from fuzzer.corpus.replay import replay_case
from fuzzer.execute.flags import SDPA_BACKENDS, Flags
from fuzzer.execute.pool import RunnerPool
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.surface import Surface
from fuzzer.execute.task import Task
from fuzzer.execute.workers import LocalRunner
from fuzzer.judge.kinds import Kind
from fuzzer.reduce.minimize import minimize
from fuzzer.reduce.repro import write_repro
from fuzzer.triage.attribute import attribute, knob_named
from fuzzer.user.capture import load_target
from fuzzer.user.verify import verify_capture
from tests import test_gpu_numerics as numerics
from tests import test_gpu_worker as worker
from tests import triage_fakes as tf
from tests.conftest import campaign_settings

pytestmark = pytest.mark.cuda
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cuda_fake_runner():
    runner = LocalRunner("cuda", threads=1, timeout=120, warmup=False)
    yield runner
    runner.close()


@pytest.fixture(scope="module")
def cuda_inductor_runner():
    runner = LocalRunner("cuda", threads=2, timeout=600, warmup=True)
    yield runner
    runner.close()



def test_a_generated_campaign_runs_on_the_gpu_with_workers_sharing_it(tmp_path: Path) -> None:
    settings = campaign_settings(out=tmp_path, device="cuda", cases=4, workers=2,
                                 dtypes=("float32", "bfloat16"), draws=2)
    summary = run_campaign(settings)
    assert summary.cases == 4
    assert summary.harness_errors == 0, summary.to_dict()


def test_a_planted_divergence_is_found_on_cuda(cuda_fake_runner) -> None:
    case = tf.planted_case("tests.fakes:uint8_plus_one", cuda_fake_runner)
    case.device = "cuda"
    verdict = replay_case(case, runner=cuda_fake_runner).verdict
    assert verdict.kind == "int-flip", verdict.summary()


def test_triton_only_knobs_run_in_triage(cuda_fake_runner) -> None:
    case = tf.planted_case("tests.triage_fakes:plant_unless_emulate", cuda_fake_runner)
    case.device = "cuda"
    knobs = [knob_named(n) for n in ("emulate_precision_casts", "eager_numerics.disable_ftz",
                                     "online_softmax=False")]
    pool = RunnerPool({"cuda": cuda_fake_runner}, warmup=False)
    attribution = attribute(case, pool, knobs)
    outcomes = {k.knob: k.outcome for k in attribution.knobs}
    assert outcomes["emulate_precision_casts"] == "vanishes", outcomes
    assert all(o in ("persists", "n/a") for k, o in outcomes.items()
               if k != "emulate_precision_casts"), outcomes


def test_minimize_and_repro_on_cuda(cuda_fake_runner, tmp_path: Path) -> None:
    case = tf.planted_case("tests.fakes:uint8_plus_one", cuda_fake_runner)
    case.device = "cuda"
    case.verdict = replay_case(case, runner=cuda_fake_runner).verdict
    result = minimize(case, cuda_fake_runner, corpus=tmp_path)
    repro = write_repro(result.case, tmp_path / "min")
    assert "DEVICE = 'cuda'" in repro.read_text()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr


# ------------------------------------------------------------------ issue 27: the GPU's own


def test_a_real_device_side_assert_is_a_crash_and_the_next_case_runs(cuda_fake_runner) -> None:
    backend = "tests.gpu_fakes:cuda_index_out_of_bounds"
    replaced = cuda_fake_runner.replaced
    hit = worker.e8m0_case(backend, cuda_fake_runner, worker.TARGETED, device="cuda").verdict
    assert hit.kind == Kind.CRASH, hit.summary()
    assert cuda_fake_runner.replaced > replaced, hit.summary()
    after = worker.e8m0_case(backend, cuda_fake_runner, device="cuda").verdict
    assert after.kind == Kind.OK, after.summary()


def test_a_real_out_of_memory_is_a_skip(cuda_fake_runner) -> None:
    verdict = worker.e8m0_case("tests.gpu_fakes:cuda_allocates_a_petabyte", cuda_fake_runner,
                               worker.TARGETED, device="cuda").verdict
    assert verdict.kind == Kind.SKIP and verdict.message.startswith("out of memory"), \
        verdict.summary()


def test_reduce_overhead_outputs_survive_the_second_run(cuda_inductor_runner) -> None:
    """CUDA graphs overwrite a replay's outputs with the next one's: cloned, the two runs are
    compared without an 'overwritten by a subsequent run' error."""
    graph, inputs = tf.fp16_roundtrip_gt()
    recipe = Recipe(surface=Surface(mode="reduce-overhead"))
    result = cuda_inductor_runner.run(Task(graph=graph, draws=[inputs], device="cuda",
                                           recipe=recipe))
    assert result.verdict.kind not in (Kind.SKIP, Kind.CRASH), result.verdict.summary()


@pytest.mark.parametrize("flags", [Flags(), Flags(matmul_tf32=True)], ids=["default", "tf32"])
def test_fp32_conv_and_linear_under_tf32_are_not_accuracy_findings(cuda_inductor_runner,
                                                                   flags) -> None:
    """Eager's cuDNN convolutions use TF32 by default (and cuBLAS matmuls with matmul TF32 on);
    Inductor calls the same kernels under the same pinned flags: no finding."""
    graph, args = numerics.conv_linear_graph()
    draws = [{str(n): t for n, t in zip(graph.input_ids(), args)}]
    verdict = cuda_inductor_runner.run(Task(graph=graph, draws=draws, device="cuda",
                                            recipe=Recipe(flags=flags))).verdict
    assert Kind.ACCURACY not in [o.kind for o in verdict.outputs[:2]], verdict.summary()
    assert not verdict.is_finding, verdict.summary()


def test_eager_attention_backend_is_recorded_on_cuda(cuda_fake_runner) -> None:
    graph, inputs = worker.sdpa_graph("float16")
    task = Task(graph=graph, draws=[inputs], device="cuda",
                recipe=Recipe("tests.fakes:uint8_plus_one"))
    seen = cuda_fake_runner.run(task).verdict.sdpa
    assert seen and set(seen) <= set(SDPA_BACKENDS), seen
    on_math = Recipe("tests.fakes:uint8_plus_one", flags=Flags(eager_sdpa="MATH"))
    pinned = cuda_fake_runner.run(Task(graph=graph, draws=[inputs], device="cuda",
                                       recipe=on_math)).verdict.sdpa
    assert pinned == ["MATH"], pinned


@pytest.mark.parametrize("seed", ["fma_exp_cancel", "softmax_recompute", "conv_gelu_e8m0"])
def test_the_seeds_model_files_are_judged_on_cuda_as_their_captures(cuda_inductor_runner,
                                                                     seed) -> None:
    """Each seed class judged on the GPU, the file's own model beside its capture (what is
    minimized and triaged: bench/gpu_smoke.sh does that and records what each did)."""
    case = load_target(REPO / "tests" / "models" / f"{seed}.py")
    case.device = "cuda"
    check = verify_capture(case, cuda_inductor_runner)
    assert check.original is not None and check.original.kind != Kind.SKIP, check.message
    if check.original.is_finding:
        assert check.reproduces, check.message


def test_the_first_gpu_finding_replays_on_cuda(cuda_inductor_runner) -> None:
    """The first campaign on a GPU (RESULTS §4: H200, torch 2.11) saved ``sort(rsqrt(x))``'s
    indices on bfloat16 with subnormal elements as a strong int-flip; replayed, it is one again."""
    case = Case.load(REPO / "tests" / "data" / "cuda_bf16_rsqrt_subnormal_sort.pt")
    assert case.device == "cuda"
    verdict = replay_case(case, runner=cuda_inductor_runner).verdict
    assert verdict.kind == Kind.INT_FLIP, verdict.summary()


def test_the_narrow_integer_scatter_crash_replays_on_cuda(cuda_inductor_runner) -> None:
    """The state campaign on a GPU (RESULTS §4, second run: H200, torch 2.11, Triton 3.6) saved a
    program whose ``scatter_reduce_`` writes through an int16 view of a bfloat16 argument: Inductor
    emits a Triton atomic add on int16, which Triton refuses ("atomic_add does not support int16";
    bench/gpu_int_atomics.py: index_add_, index_put_(accumulate=True), scatter_add_ and
    scatter_reduce_ on int8, uint8 and int16 alike). Replayed, it is that crash again."""
    case = Case.load(REPO / "tests" / "data" / "cuda_int16_view_scatter_reduce_atomic.pt")
    assert case.device == "cuda" and case.verdict.kind == Kind.CRASH
    verdict = replay_case(case, runner=cuda_inductor_runner).verdict
    assert verdict.kind == Kind.CRASH, verdict.summary()
    assert "scatter_reduce" in verdict.message, verdict.message

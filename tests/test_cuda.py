"""The CUDA path end to end; every test here is marked ``cuda`` and skips without a CUDA device
(conftest). ``bench/gpu_smoke.sh`` runs them on a lent GPU machine, with the rest of a GPU run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzzer.campaign.local import run_campaign
from fuzzer.corpus.replay import replay_case
from fuzzer.execute.pool import RunnerPool
from fuzzer.execute.workers import Runner
from fuzzer.reduce.minimize import minimize
from fuzzer.reduce.repro import write_repro
from fuzzer.triage.attribute import attribute, knob_named
from tests import triage_fakes as tf
from tests.conftest import campaign_settings

pytestmark = pytest.mark.cuda
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cuda_fake_runner():
    runner = Runner("cuda", threads=1, timeout=120, warmup=False)
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

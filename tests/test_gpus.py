"""Workers and GPUs, tested without one: how workers are dealt to GPUs, how many share one by
default, and that a worker which cannot see its GPU stops the campaign loudly (never a skip)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzzer.campaign.local import run_campaign
from fuzzer.errors import HarnessError
from fuzzer.execute import config
from fuzzer.execute.pool import RunnerPool
from fuzzer.execute.workers import LocalRunner, assign_gpus, workers_per_gpu
from fuzzer.triage.attribute import Knob, flip
from tests import triage_fakes as tf
from tests.conftest import campaign_settings

GIB = 1 << 30


def test_workers_share_gpus_round_robin() -> None:
    assert assign_gpus(4, None, ["0"]) == ["0", "0", "0", "0"]  # one GPU: all share it
    assert assign_gpus(3, None, ["0", "1"]) == ["0", "1", "0"]
    assert assign_gpus(2, (1,), ["0", "1"]) == ["1", "1"]  # --gpus 1
    # CUDA_VISIBLE_DEVICES=4,6 in the parent: indices map to the physical ids it names
    assert assign_gpus(2, (0, 1), ["4", "6"]) == ["4", "6"]
    with pytest.raises(HarnessError, match="--gpus 2"):
        assign_gpus(2, (2,), ["0", "1"])
    with pytest.raises(HarnessError, match="no CUDA device"):
        assign_gpus(1, None, [])


def test_how_many_workers_share_a_gpu_by_default() -> None:
    assert workers_per_gpu(80 * GIB, 16, 1) == 4  # an H100 with 16 cores
    assert workers_per_gpu(80 * GIB, 4, 1) == 2  # cores run out first
    assert workers_per_gpu(12 * GIB, 64, 1) == 2  # memory runs out first
    assert workers_per_gpu(4 * GIB, 64, 1) == 1  # never fewer than one
    assert workers_per_gpu(80 * GIB, 16, 8) == 1  # eight GPUs share 16 cores


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")
def test_a_worker_that_cannot_see_its_gpu_is_a_harness_error(tmp_path: Path) -> None:
    runner = LocalRunner("cuda", timeout=60, warmup=False, gpu="0")
    try:
        with pytest.raises(HarnessError, match="sees no CUDA device"):
            runner.run(None)
    finally:
        runner.close()
    settings = campaign_settings(out=tmp_path, device="cuda", cases=2, workers=2)
    with pytest.raises(HarnessError):
        run_campaign(settings)  # loudly, not two skips


def test_a_knob_missing_from_this_torch_is_not_applicable(fake_runner) -> None:
    assert config.missing({"emulate_precision_casts": True, "no_such_knob": True}) == \
        ["no_such_knob"]
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    result = flip(case, Knob("future_knob", {"no_such_knob": True}), pool)
    assert (result.outcome, result.verdict) == ("n/a", "not in this torch (no_such_knob)")

"""bench/gpu_smoke.sh cannot rot: its CPU dry run, with tiny budgets and a planted fake backend,
runs every step (environment, the cuda tests, a campaign per worker count named, one here, a
seed model file replayed and minimized, the first finding triaged and minimized) and leaves the
summary and one archive, all the device tool fetches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]


def test_gpu_smoke_dry_run_on_the_cpu(tmp_path: Path) -> None:
    out, fetch = tmp_path / "smoke", tmp_path / "fetch"
    command = ["bash", str(REPO / "bench" / "gpu_smoke.sh"), str(out), "--device", "cpu",
               "--campaign", "3", "--workers", "1", "--minimize", "30s",
               "--seeds", "fma_exp_cancel", "--backend", "tests.fakes:uint8_plus_one",
               "--deadline", "240", "--fetch", str(fetch), "--surface", "default"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=400,
                          env={**os.environ, "PYTHON": sys.executable})
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in fetch.iterdir()) == ["smoke.tar.gz", "summary.json"]  # <= 8
    summary = json.loads((fetch / "summary.json").read_text())
    steps = {s["step"]: s["rc"] for s in summary["steps"]}
    assert "skipped" not in steps.values(), steps
    assert steps["environment"] == steps["cuda_tests"] == "0", steps
    assert summary["env"]["torch"] == torch.__version__
    assert summary["env"]["flags"]["cudnn_tf32"] is not None
    # one worker count (its seed, 1, finds in 3 cases): the loop runs each alike; a GPU run
    # names several
    assert list(summary["campaigns"]) == ["1"]
    run = summary["campaigns"]["1"]
    assert run["cases"] >= 1 and run["cases_per_min"] > 0 and run["harness_errors"] == 0, run
    seed = summary["seeds"]["fma_exp_cancel"]
    assert seed["replay"]["verdict"]["kind"] and "captured_verdict" in seed["replay"]
    triaged = summary["first_finding"]["triage"]["attribution"]
    assert triaged["reproduces"] and {k["knob"] for k in triaged["knobs"]} >= {"tf32=off"}
    assert summary["first_finding"]["minimize"]["repro"].endswith("repro.py")
    with tarfile.open(fetch / "smoke.tar.gz") as archive:
        names = set(archive.getnames())
    assert {"smoke/summary.json", "smoke/steps.tsv", "smoke/min-first/repro.py"} <= names

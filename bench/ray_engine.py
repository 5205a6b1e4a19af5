"""The Ray engine against the local one on this machine, and a node lost mid-campaign.

    RAY_AUTH_MODE=disabled .venv/bin/python bench/ray_engine.py [--cases 60] [--rounds 2]

1. Overhead: the same campaign (default strategies, real Inductor, two CPU slots, Inductor's
   caches off, so no run reuses another's kernels) on the local engine and on a local Ray
   cluster, alternated ``--rounds`` times in one run; cases/min of each and their ratio.
2. Node loss: a head without CPUs and one worker node of two CPUs (``ray.cluster_utils``); after a
   quarter of the cases the worker node is removed and another added. Cases issued, answered,
   re-queued, actor deaths, findings kept, and whether the corpus equals the local engine's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from fuzzer.campaign import fleet  # noqa: E402
from fuzzer.campaign.local import run_campaign  # noqa: E402
from fuzzer.campaign.loop import Outcome  # noqa: E402
from fuzzer.campaign.settings import Settings  # noqa: E402
from fuzzer.execute.recipe import Recipe  # noqa: E402


def settings(out: Path, cases: int, backend: str = "inductor") -> Settings:
    # Caches off through the case's own recipe: Ray's workers do not see the driver's
    # environment after ray.init, so a fresh TORCHINDUCTOR_CACHE_DIR would reach one engine only.
    return Settings(out=out, cases=cases, seed=3, recipe=Recipe(backend).fresh(), workers=2)


def overhead(cases: int, rounds: int) -> dict:
    rates: dict[str, list[float]] = {"local": [], "ray": []}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as tmp:
                local = run_campaign(settings(Path(tmp) / "local", cases))
                remote, _ = fleet.run_fleet(settings(Path(tmp) / "ray", cases))
                rates["local"].append(local.cases_per_min)
                rates["ray"].append(remote.cases_per_min)
    finally:
        ray.shutdown()
    local, remote = sum(rates["local"]), sum(rates["ray"])
    return {"cases": cases, "rounds": rates, "ray_over_local": round(remote / local, 3)}


def node_loss(cases: int) -> dict:
    backend = "tests.fakes:uint8_plus_one"
    os.environ["NUMFUZZ_TRUST_BACKENDS"] = backend
    with tempfile.TemporaryDirectory() as tmp:
        expected = run_campaign(settings(Path(tmp) / "local", cases, backend))
        nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
        nodes.add_node(num_cpus=2)
        ray.init(address=nodes.address, log_to_driver=False, logging_level="ERROR")
        answered: list[int] = []

        def on_outcome(outcome: Outcome) -> None:
            answered.append(outcome.index)
            if len(answered) == cases // 4:
                nodes.remove_node(list(nodes.worker_nodes)[0])
                nodes.add_node(num_cpus=2)

        try:
            start = time.monotonic()
            summary, report = fleet.run_fleet(settings(Path(tmp) / "ray", cases, backend),
                                              on_outcome=on_outcome)
            seconds = time.monotonic() - start
        finally:
            ray.shutdown()
            nodes.shutdown()
        same = sorted(p.name for p in (Path(tmp) / "ray").glob("*.pt")) == \
            sorted(p.name for p in (Path(tmp) / "local").glob("*.pt"))
    return {**report.to_dict(), "cases": cases, "answered_once": sorted(answered) ==
            list(range(cases)), "findings_kept": dict(summary.findings),
            "local_findings": dict(expected.findings), "same_corpus_as_local": same,
            "seconds": round(seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps({"overhead": overhead(args.cases, args.rounds),
                      "node_loss": node_loss(40)}, indent=1))


if __name__ == "__main__":
    main()

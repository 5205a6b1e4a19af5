"""The Ray engine across nodes: a worker node removed mid-campaign loses no reported finding, and
every case index is answered exactly once (its unanswered cases run on the node that replaces it).

A head and worker nodes on this one machine (``ray.cluster_utils.Cluster``), one cluster for the
module; skipped where Ray is not installed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from fuzzer.campaign import fleet
from fuzzer.campaign.local import run_campaign
from fuzzer.campaign.loop import Outcome
from fuzzer.campaign.settings import Settings
from tests.conftest import campaign_settings, ledger_of

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    os.environ["RAY_AUTH_MODE"] = "disabled"
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 0,
                                                         "include_dashboard": False})
    nodes.add_node(num_cpus=2)
    ray.init(address=nodes.address, log_to_driver=False, logging_level="ERROR")
    yield nodes
    ray.shutdown()
    nodes.shutdown()


def test_a_node_lost_mid_campaign_loses_nothing(cluster, tmp_path: Path) -> None:
    def settings(out: Path) -> Settings:
        return campaign_settings(out=out, cases=12, seed=8, backend="tests.fakes:uint8_plus_one",
                                 draws=1, timeout=60, dtypes=("float32",), workers=2)

    expected = run_campaign(settings(tmp_path / "local"))
    answered: list[int] = []
    lost = threading.Event()

    def on_outcome(outcome: Outcome) -> None:
        answered.append(outcome.index)
        if len(answered) == 4 and not lost.is_set():  # mid-campaign: the worker node goes
            lost.set()
            cluster.remove_node(list(cluster.worker_nodes)[0])
            cluster.add_node(num_cpus=2)

    summary, report = fleet.run_fleet(settings(tmp_path / "ray"), on_outcome=on_outcome)
    assert lost.is_set()
    assert sorted(answered) == list(range(12))  # each index answered exactly once
    assert summary.findings == expected.findings
    assert sorted(p.name for p in (tmp_path / "ray").glob("*.pt")) == \
        sorted(p.name for p in (tmp_path / "local").glob("*.pt"))
    assert report.actor_deaths >= 1 and report.requeued >= 1
    state = ledger_of(tmp_path / "ray")
    assert state["below"] == 12

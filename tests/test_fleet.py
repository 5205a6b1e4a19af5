"""The Ray engine on one machine: the same findings as the local engine, compiler crashes and hangs
recorded as findings while the campaign goes on, actors that die or hang replaced and their cases
re-queued, a case that kills its actor twice kept as a worker-kill finding, and --resume.

One Ray instance for the module (start-up takes seconds), with two CPU slots and two logical GPUs;
skipped where Ray is not installed (``pip install numfuzz[ray]``)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from fuzzer.campaign import fleet
from fuzzer.campaign.local import run_campaign
from fuzzer.campaign.settings import Settings, make_case
from fuzzer.corpus.case import Case
from tests.conftest import campaign_settings, ledger_of, night_settings

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module", autouse=True)
def cluster(tmp_path_factory: pytest.TempPathFactory):
    os.environ["RAY_AUTH_MODE"] = "disabled"  # a throwaway local cluster: no token to manage
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR", _temp_dir=str(tmp_path_factory.mktemp("ray")))
    yield
    ray.shutdown()


def settings(out: Path, backend: str, cases: int, workers: int = 2, **extra) -> Settings:
    """A fleet of ``workers`` actors; each actor start costs an interpreter, torch and a worker
    (~9 CPU-seconds), so tests that need no second actor take one."""
    return campaign_settings(out=out, cases=cases, seed=9, backend=backend, draws=1, timeout=60,
                             dtypes=("float32",), workers=workers, **extra)


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*.pt"))


def test_ray_and_local_engines_keep_the_same_findings(tmp_path: Path) -> None:
    local = run_campaign(settings(tmp_path / "local", "tests.fakes:uint8_plus_one", 8))
    summary, report = fleet.run_fleet(settings(tmp_path / "ray", "tests.fakes:uint8_plus_one", 8))
    assert local.findings and summary.findings == local.findings
    assert files(tmp_path / "ray") == files(tmp_path / "local")
    assert summary.cases == report.answered == 8 and report.actor_deaths == 0
    for name in files(tmp_path / "ray"):  # where it was found travels with the finding
        origin = Case.load(tmp_path / "ray" / name).origin
        assert origin["host"] and origin["device_name"] == "cpu"
    state = ledger_of(tmp_path / "ray")
    assert state["below"] == 8


@pytest.mark.parametrize("backend,kind,timeout", [
    ("tests.fakes:segfault", "memory-unsafe", 60), ("tests.fakes:hang", "timeout", 3)])
def test_compiler_crash_and_hang_are_findings_and_the_campaign_goes_on(
        tmp_path: Path, backend: str, kind: str, timeout: float) -> None:
    s = settings(tmp_path, backend, 2, workers=1)  # the second case runs after the first's fault
    s.timeout = timeout
    summary, report = fleet.run_fleet(s)
    assert summary.findings == {kind: 2} and report.actor_deaths == 0  # the worker died, not
    assert len(files(tmp_path)) == 2                                  # the actor


def _targeted(s: Settings, cases: int) -> set[int]:
    """The cases tests.fakes.kill_parent and stop_parent act on."""
    found = set()
    for index in range(cases):
        graph = make_case(s, index)[0].graph
        # a module's parameters and buffers are attributes, not arguments of the call
        if any(math.prod(graph.node(n).shape) % 3 == 0 for n in graph.input_ids()
               if "state" not in graph.node(n).attrs):
            found.add(index)
    return found


def test_a_case_that_kills_its_actor_twice_is_a_worker_kill_finding(tmp_path: Path) -> None:
    s = settings(tmp_path, "tests.fakes:kill_parent", 3)
    targeted = _targeted(s, 3)
    assert targeted and len(targeted) < 3
    summary, report = fleet.run_fleet(s)
    assert summary.cases == 3  # every case answered once, the campaign went on
    assert sorted(report.worker_kills) == sorted(targeted)
    assert summary.findings == {"worker-kill": len(targeted)}
    assert report.actor_deaths == 2 * len(targeted) and report.requeued >= len(targeted)
    kept = [Case.load(tmp_path / n) for n in files(tmp_path)]
    assert sorted(c.origin["index"] for c in kept) == sorted(targeted)
    assert all(c.verdict.kind == "worker-kill" for c in kept)


def test_a_hung_actor_is_killed_and_its_cases_run_elsewhere(tmp_path: Path,
                                                             monkeypatch) -> None:
    # hung: silent for the 15 s case timeout (a case takes 1 s, up to ~10 on a loaded 2-core
    # machine), then 5 s without answering a ping: a slow actor answers it, a stopped one cannot
    monkeypatch.setattr(fleet, "DEADLINE_SLACK", 0.0)
    monkeypatch.setattr(fleet, "PING_WAIT", 5.0)
    s = settings(tmp_path, "tests.fakes:stop_parent", 2)
    s.timeout = 15
    targeted = _targeted(s, 2)
    assert targeted and len(targeted) < 2
    summary, report = fleet.run_fleet(s)
    assert summary.cases == 2 and report.hung == 2 * len(targeted)
    assert sorted(report.worker_kills) == sorted(targeted)


class _Pinged:
    """A Ray stand-in for ``Fleet.kill_hung``: whether a ping gets its answer, what was killed."""

    def __init__(self, answers: bool) -> None:
        self.answers, self.killed = answers, []

    def wait(self, refs: list, timeout: float) -> tuple[list, list]:
        return (refs, []) if self.answers else ([], refs)

    def kill(self, actor, no_restart: bool) -> None:
        self.killed.append(actor)


class _Actor:
    class ping:  # noqa: N801 -- shaped like a Ray actor method: actor.ping.remote()
        @staticmethod
        def remote() -> object:
            return object()


@pytest.mark.parametrize("answers", [True, False])
def test_an_actor_past_its_deadline_is_killed_only_when_it_does_not_answer_a_ping(
        monkeypatch, answers: bool) -> None:
    now = [0.0]
    monkeypatch.setattr(fleet, "time", type("Time", (), {"monotonic": lambda: now[0]}))
    ray_ = _Pinged(answers)
    driver = object.__new__(fleet.Fleet)
    driver.ray, driver.report = ray_, fleet.FleetReport()
    driver.settings = campaign_settings(out=Path("unused"), timeout=10)
    slot = fleet.Slot(_Actor(), pending={"ref": 0}, since=0.0)
    driver.slots = [slot]
    deadline = 10 + fleet.DEADLINE_SLACK
    for now[0] in (deadline, deadline + 1, deadline + 2, deadline + 3 + fleet.PING_WAIT):
        driver.kill_hung()
    assert ray_.killed == ([] if answers else [slot.actor])
    assert driver.report.hung == (0 if answers else 1)
    # an actor that answered is only slow: its deadline started again when the answer came
    assert slot.since == (deadline + 2 if answers else deadline + 3 + fleet.PING_WAIT)


def test_resume_continues_from_the_ledger(tmp_path: Path) -> None:
    # one fleet for both runs (an actor start is ~9 CPU-seconds): what --resume reads is the
    # ledger, on the driver's side
    actors = fleet.start_fleet(settings(tmp_path, "eager", 3, workers=1))
    try:
        first, _ = fleet.run_fleet(settings(tmp_path, "eager", 3, workers=1), fleet=actors)
        again, report = fleet.run_fleet(settings(tmp_path, "eager", 5, workers=1, resume=True),
                                        fleet=actors)
    finally:
        actors.close()
    assert first.cases == 3 and again.cases == report.answered == 2


def test_gpu_slots_are_the_cluster_gpus_and_mixed_versions_are_refused() -> None:
    assert fleet.fleet_slots(ray, campaign_settings(out=Path("unused"), device="cuda")) == 2
    assert fleet.fleet_slots(ray, campaign_settings(out=Path("unused"), workers=3)) == 3
    same = [{"torch": "2.13.0"}, {"torch": "2.13.0"}]
    assert fleet.mixed_versions(same) == ""
    assert "2.11.0, 2.13.0" in fleet.mixed_versions([*same, {"torch": "2.11.0"}])


def test_the_nightly_on_ray_fuzzes_and_minimizes_on_the_fleet(tmp_path: Path, monkeypatch,
                                                              few_knobs) -> None:
    from fuzzer.nightly.job import run_night
    from fuzzer.report.store import Store

    sent: list[str] = []
    original = fleet.ActorRunner.run

    def counted(self, task):  # the driver's side of every minimize/triage task
        sent.append(task.recipe.backend)
        return original(self, task)

    monkeypatch.setattr(fleet.ActorRunner, "run", counted)
    no_known = tmp_path / "none.toml"
    no_known.write_text("")
    settings = night_settings(reports=tmp_path / "reports", device="cpu", cases=4, seed=9, k=1,
                             bisect=False, date="2030-02-01", dtypes=("float32",),
                             backend="tests.fakes:uint8_plus_one", workers=1, engine="ray",
                             known_file=no_known)
    lines: list[str] = []
    summary = run_night(settings, log=lines.append)
    assert any("engine=ray" in line for line in lines)
    night = json.loads((summary.parent / "night.json").read_text())
    assert night["cases"] == 4 and night["raw_findings"], lines
    with Store.in_reports(tmp_path / "reports") as store:
        assert store.findings(), lines  # minimized, attributed and recorded ...
    assert sent  # ... by tasks that went to the fleet's actors

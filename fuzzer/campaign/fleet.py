"""The Ray engine: one campaign over a fleet of machines, one ledger, one corpus, one writer.

The driver (where ``numfuzz run --engine ray`` runs) owns the campaign's ledger, the corpus
and everything written to them. One actor per GPU (or per CPU slot) is given the campaign's
settings once and then only case indices: case ``i`` is a pure function of the seed and ``i``
(``settings.make_case``), so the actor builds it itself. It runs each case on its own worker
process (``execute.workers.LocalRunner``), exactly as the local engine does, so a compiler
segfault or hang is still a ``crash`` or ``timeout`` finding and costs the actor nothing. Every
case's answer comes back as soon as it is done; a kept case carries its file's bytes (versions,
host and device name in its origin), and the driver writes them atomically.

Faults. Ray's own retries are off: a case that kills what runs it must not be re-run behind our
back. When an actor's process dies, the cases it had not answered go back to the queue once as a
range; when a range dies again it is split into single cases; a single case that was running when
its actor died twice is a ``worker-kill`` finding and is not queued again. An actor that gives no
answer within the deadline, and then does not answer a ping either, is hung: it is killed, which
is handled the same way. The ping tells a stopped or wedged actor from one that is only slow (a
loaded machine, a restart that imports torch again): a slow one answers and gets another
deadline. When the actor went with its node (the node is gone once Ray has restarted the actor
elsewhere), its cases go back as they were: they did not kill anything. Answered cases are
never run again, and ``--resume`` continues from the ledger if the driver itself dies. Ray restarts
dead actors (``max_restarts``), on another node when theirs is gone.
"""

from __future__ import annotations

import os
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fuzzer.campaign import harness
from fuzzer.campaign.local import run_one
from fuzzer.campaign.loop import Loop, Outcome, Summary, kept
from fuzzer.campaign.settings import Settings, arm_of, kept_case, make_case
from fuzzer.device import Device
from fuzzer.errors import HarnessError, InputError
from fuzzer.execute import memcheck
from fuzzer.execute.task import RunResult, Task, harness_error
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import Verdict

RANGE = 4  # cases handed to an actor at a time
DEADLINE_SLACK = 120.0  # seconds past the case timeout before an actor is pinged
PING_WAIT = 30.0  # seconds a pinged actor has to answer before it counts as hung
RESTART_WAIT = 120.0  # seconds a dead actor has to come back before its slot counts as lost
KILLS_TO_FINDING = 2  # a case running when this many actors died is a worker-kill finding


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("--engine ray needs Ray: pip install 'numfuzz[ray]'") from None
    return ray


# ---------------------------------------------------------------- the actor


class ActorCases:
    """What runs inside one actor: builds cases from indices and runs them on a worker; the
    nightly's minimize and triage tasks go to the same worker, or to one of the actor's runner
    pool started under a knob's environment."""

    def __init__(self, settings: Settings, threads: int) -> None:
        from fuzzer.execute.pool import RunnerPool
        from fuzzer.execute.workers import LocalRunner

        self.settings = settings
        self.runner = LocalRunner(settings.device, threads, settings.timeout,
                             warmup=settings.recipe.warms_up, recycle=settings.recycle)
        self.pool = RunnerPool({settings.device: self.runner}, timeout=settings.timeout,
                               warmup=settings.recipe.warms_up)
        self.where = {"host": socket.gethostname(), "device_name": device_name(settings.device)}

    def describe(self) -> dict:
        import ray
        import torch

        return {**self.where, "torch": str(torch.__version__), "pid": os.getpid(),
                "node": ray.get_runtime_context().get_node_id()}

    def run_case(self, index: int) -> dict:
        """Case ``index`` as the local engine runs it (``local.run_one``: what raises while
        building or running it is the case's harness error), with the case file's bytes when
        it is kept."""
        ran = run_one(self.settings, self.runner, index, None)
        answer = {"index": index, "verdict": ran.result.verdict.to_dict(), "name": None,
                  "data": None, "strategy": ran.strategy, "seconds": ran.seconds,
                  "details": ran.details, "arm": ran.arm}
        try:
            kept = kept_case(self.settings, ran.case, ran.task, ran.result.verdict) \
                if ran.case is not None and ran.task is not None else None
            if kept is not None:
                kept.origin.update(self.where)
                answer["name"], answer["data"] = kept.file_name(), kept.to_bytes()
        except Exception as err:
            answer["verdict"] = harness.error_verdict("saving", err).to_dict()
            answer["details"] = harness.traceback_text(err)
        return answer

    def run_task(self, task: Task, env: dict | None = None) -> RunResult:
        """One task as ``LocalRunner.run`` takes it (the nightly's minimize and triage stages), on a
        worker started under ``env`` when a knob needs one."""
        return self.pool.run(task, env)

    def close(self) -> None:
        self.pool.close()
        self.runner.close()


def device_name(device: str) -> str:
    if Device(device).is_cuda:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    return "cpu"


def actor_class(ray: Any) -> Any:
    # max_restarts: a dead actor comes back (elsewhere if its node is gone); max_task_retries=0:
    # the calls it had in flight fail to the driver, which decides what to run again. The ping
    # has a thread of its own, so an actor busy with a case still answers it.
    class Actor(ActorCases):
        @ray.method(concurrency_group="ping")
        def ping(self) -> bool:
            return True

    return ray.remote(max_restarts=-1, max_task_retries=0,
                      concurrency_groups={"ping": 1})(Actor)


# ---------------------------------------------------------------- the driver


@dataclass
class Batch:
    """Case indices handed to one actor together."""

    indices: list[int]
    retried: bool = False  # already re-queued once as a whole after its actor died


@dataclass
class Slot:
    actor: Any
    pending: dict = field(default_factory=dict)  # object ref -> index, in submission order
    batch: Batch | None = None
    since: float = 0.0  # when its oldest pending case started (or the last answer came)
    node: str = ""  # the Ray node its actor runs on
    killed: bool = False  # the driver killed it as hung; its calls have not failed yet
    ping: Any = None  # the ping sent once its deadline passed, not answered yet
    pinged: float = 0.0  # when it was sent


@dataclass
class FleetReport:
    """What the fleet did beyond the summary: the fault handling, for a person to check."""

    issued: int = 0
    answered: int = 0
    requeued: int = 0
    actor_deaths: int = 0
    worker_kills: list[int] = field(default_factory=list)
    hung: int = 0
    nodes: set = field(default_factory=set)

    def to_dict(self) -> dict:
        return {"issued": self.issued, "answered": self.answered, "requeued": self.requeued,
                "actor_deaths": self.actor_deaths, "worker_kills": self.worker_kills,
                "hung_actors_killed": self.hung, "hosts": sorted(self.nodes)}


class Fleet:
    """The driver's side of a Ray campaign (``run_fleet``)."""

    def __init__(self, settings: Settings, slots: int, allow_mixed: bool = False) -> None:
        if memcheck.active() or settings.malloc_check:  # Ray starts its actors itself
            raise InputError("--malloc-check runs local workers only: drop --engine ray")
        self.ray = import_ray()
        self.settings = settings
        self.report = FleetReport()
        self.queue: deque[Batch] = deque()
        self.kills: dict[int, int] = {}  # case index -> actors that died while running it
        self.to_record: list[int] = []  # worker-kill findings not yet written
        from fuzzer.execute.workers import WORKER_THREADS

        gpus = 1 if Device(settings.device).is_cuda else 0
        make = actor_class(self.ray).options(num_gpus=gpus, num_cpus=1)
        self.slots = [Slot(make.remote(settings, WORKER_THREADS)) for _ in range(slots)]
        self.check_versions(allow_mixed)

    def check_versions(self, allow_mixed: bool) -> None:
        try:
            infos = self.ray.get([s.actor.describe.remote() for s in self.slots], timeout=600)
        except (self.ray.exceptions.RayError, TimeoutError) as err:
            self.close()
            raise HarnessError(f"the fleet's actors did not start: {type(err).__name__}") \
                from None
        self.report.nodes |= {i["host"] for i in infos}
        for slot, info in zip(self.slots, infos):
            slot.node = info["node"]
        problem = mixed_versions(infos)
        if problem and not allow_mixed:
            self.close()
            raise InputError(problem)

    def close(self) -> None:
        """Each actor closes its worker processes, then goes."""
        try:
            self.ray.get([s.actor.close.remote() for s in self.slots], timeout=60)
        except (self.ray.exceptions.RayError, TimeoutError):
            pass  # a dead or hung actor: killing it below is all there is to do
        for slot in self.slots:
            self.ray.kill(slot.actor, no_restart=True)

    def runner(self, device: str, env: dict | None = None) -> ActorRunner:
        """A runner on the fleet's first actor (``RunnerPool``'s factory on Ray)."""
        return ActorRunner(self.ray, self.slots[0].actor, device, env)

    # ------------------------------------------------------------ handing out cases

    def feed(self, next_batch: Callable[[], Batch | None],
             halted: Callable[[], bool] = lambda: False) -> None:
        """Give every idle actor a batch: first those handed back by lost actors, unless the
        run has stopped (they never ran, so the ledger leaves them to ``--resume``)."""
        if self.queue and halted():
            self.queue.clear()
        for slot in self.slots:
            if slot.batch is not None:
                continue
            batch = self.queue.popleft() if self.queue else next_batch()
            if batch is None:
                return
            slot.batch, slot.since = batch, time.monotonic()
            for index in batch.indices:
                slot.pending[slot.actor.run_case.remote(index)] = index

    def in_flight(self) -> list:
        return [ref for slot in self.slots for ref in slot.pending]

    def slot_of(self, ref: Any) -> Slot:
        return next(s for s in self.slots if ref in s.pending)

    # ------------------------------------------------------------ answers and faults

    def answer(self, ref: Any) -> dict | None:
        """The answer behind ``ref``, or None when its actor died (its cases re-queued)."""
        slot = self.slot_of(ref)
        try:
            answer = self.ray.get(ref)
        except self.ray.exceptions.RayActorError:  # a killed or unreachable actor
            self.actor_died(slot, culprit=self.process_died(slot))
            return None
        slot.pending.pop(ref)
        slot.since = time.monotonic()
        if not slot.pending:
            slot.batch = None
        self.report.answered += 1
        return answer

    def actor_died(self, slot: Slot, culprit: bool = True) -> None:
        """Every case the actor had not answered goes back; the running one is counted as a kill
        when it may have caused the death (not when the node went or the actor was restarting:
        then it goes back as it was)."""
        unanswered = list(slot.pending.values())
        batch = slot.batch
        slot.pending.clear()
        slot.batch, slot.killed = None, False
        self.report.actor_deaths += 1
        if not unanswered:
            return
        if not culprit:
            self.requeue(Batch(unanswered, retried=batch.retried if batch else True))
            return
        running = unanswered[0]
        self.kills[running] = self.kills.get(running, 0) + 1
        if batch is not None and not batch.retried and len(unanswered) > 1:
            self.requeue(Batch(unanswered, retried=True))
            return
        for index in unanswered:  # a second death: one case at a time from now on
            if self.kills.get(index, 0) >= KILLS_TO_FINDING:
                self.report.worker_kills.append(index)
                self.to_record.append(index)
            else:
                self.requeue(Batch([index], retried=True))

    def process_died(self, slot: Slot) -> bool:
        """Did the actor's process die on a node that is still alive (so the case it ran may
        have killed it), rather than with its node? Asked once Ray has restarted the actor (or
        given up on it): by then Ray has settled whether the old node is gone."""
        info = self.restarted(slot)
        alive = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        died_here = slot.node in alive
        if info is not None:
            slot.node = info["node"]
            self.report.nodes.add(info["host"])
        return died_here

    def restarted(self, slot: Slot) -> dict | None:
        """The restarted actor's description, waiting while Ray says it is only unavailable
        (restarting); None if it does not come back within the deadline slack."""
        deadline = time.monotonic() + RESTART_WAIT
        while time.monotonic() < deadline:
            try:
                return self.ray.get(slot.actor.describe.remote(),
                                    timeout=max(1.0, deadline - time.monotonic()))
            except self.ray.exceptions.ActorUnavailableError:
                time.sleep(0.5)
            except (self.ray.exceptions.RayError, TimeoutError):
                return None
        return None

    def requeue(self, batch: Batch) -> None:
        self.queue.append(batch)
        self.report.requeued += len(batch.indices)

    def kill_hung(self) -> None:
        """Ping an actor that answered nothing within the deadline; kill it when the ping goes
        unanswered too. An actor that answers is only slow: its deadline starts again. A
        stopped process may take Ray more than one kill to end; it is counted as one hung actor."""
        deadline = self.settings.timeout + DEADLINE_SLACK
        for slot in self.slots:
            if not slot.pending or time.monotonic() - slot.since <= deadline:
                slot.ping = None
            elif slot.ping is None:
                slot.ping, slot.pinged = slot.actor.ping.remote(), time.monotonic()
            elif self.ray.wait([slot.ping], timeout=0)[0]:
                slot.ping, slot.since = None, time.monotonic()  # alive: a slow case
            elif time.monotonic() - slot.pinged > PING_WAIT:
                self.report.hung += not slot.killed
                slot.killed, slot.since, slot.ping = True, time.monotonic(), None
                self.ray.kill(slot.actor, no_restart=False)


class ActorRunner:
    """A ``TaskRunner`` whose worker lives in a fleet actor (``LocalRunner``'s remote twin): how
    the nightly's minimize, triage and recheck stages send their work to the same actors as its
    campaign."""

    def __init__(self, ray: Any, actor: Any, device: str, env: dict | None = None) -> None:
        self.ray, self.actor, self.env = ray, actor, dict(env or {})
        self.device = device

    def run(self, task: Task, timeout: float | None = None) -> RunResult:
        """``task`` on the actor's worker; ``timeout`` is not asked of an actor (its worker's
        own per-case timeout cuts a run: ``pool.run_within`` cuts local runs only)."""
        try:
            return self.ray.get(self.actor.run_task.remote(task, self.env))
        except self.ray.exceptions.RayActorError as err:  # the fleet's trouble, not the case's
            return RunResult(harness_error(f"its actor died: {type(err).__name__}"))

    def close(self) -> None:
        """The actor belongs to the fleet, which closes it."""


def mixed_versions(infos: list[dict]) -> str:
    """Why a fleet is refused, if it is: mixed torch versions would mix their findings."""
    versions = sorted({i["torch"] for i in infos})
    if len(versions) < 2:
        return ""
    return (f"the fleet runs several torch versions ({', '.join(versions)}); pass "
            "--allow-mixed-versions to fuzz on it anyway")


def fleet_slots(ray: Any, settings: Settings) -> int:
    """One actor per GPU of the cluster on CUDA; ``--workers`` CPU slots otherwise."""
    if Device(settings.device).is_cuda:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if gpus < 1:
            raise HarnessError("--engine ray --device cuda: the Ray cluster has no GPU")
        return gpus
    return settings.workers


def connect(address: str | None) -> Any:
    """Join the cluster at ``address`` (``auto``: the one ``ray start`` made here), or start a
    local one; InputError in one line when there is none to join."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR")
    except (ConnectionError, RuntimeError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(f"cannot join the Ray cluster at {address!r}: {first}") from None
    return ray


def start_fleet(settings: Settings, address: str | None = None,
                allow_mixed: bool = False) -> Fleet:
    ray = connect(address)
    return Fleet(settings, fleet_slots(ray, settings), allow_mixed)


def run_fleet(settings: Settings, address: str | None = None,
              on_outcome: Callable[[Outcome], None] | None = None,
              should_stop: Callable[[], bool] = lambda: False,
              allow_mixed: bool = False, fleet: Fleet | None = None) \
        -> tuple[Summary, FleetReport]:
    """``local.run_campaign`` on a Ray cluster: the same cases, the same corpus files, the same
    loop core. With ``fleet``, on its actors (the caller closes it); else on a fleet started and
    closed here."""
    if settings.search != "random":  # its pool lives beside the workers, not on the driver
        raise InputError("--search guided runs on the local engine only")
    settings.check_resume()  # a refused --resume is one line before any actor starts
    own = fleet is None
    fleet = fleet or start_fleet(settings, address, allow_mixed)
    ray = fleet.ray
    fleet.report = FleetReport(nodes=set(fleet.report.nodes))
    try:
        loop = Loop(settings, on_outcome, should_stop)
    except BaseException:
        if own:
            fleet.close()
        raise

    def next_batch() -> Batch | None:
        taken: list[int] = []
        while len(taken) < RANGE and (index := loop.next_index()) is not None:
            taken.append(index)
        fleet.report.issued = loop.issued
        return Batch(taken) if taken else None

    try:
        while True:
            fleet.feed(next_batch, loop.halted)
            pending = fleet.in_flight()
            if not pending and not fleet.queue:
                break
            ready, _ = ray.wait(pending, num_returns=1, timeout=1.0) if pending else ([], [])
            for ref in ready:
                answer = fleet.answer(ref)
                if answer is not None:
                    loop.finish(*_outcome(settings, answer))
            while fleet.to_record:
                loop.finish(*_worker_kill(settings, fleet.to_record.pop()))
            fleet.kill_hung()
    finally:
        if own:
            fleet.close()
    return loop.close(), fleet.report


def _outcome(settings: Settings, answer: dict) -> tuple[Outcome, str]:
    """An actor's answer as an outcome, its case file saved (``loop.kept``), and the traceback
    of a harness error; a failure to read or save it is the case's harness error."""
    try:
        verdict = Verdict.from_dict(answer["verdict"])
    except Exception as err:
        return Outcome(answer["index"], harness.error_verdict("saving", err), None, False,
                       answer["strategy"], answer["seconds"]), harness.traceback_text(err)
    made = (answer["name"], answer["data"]) if answer["name"] is not None else None
    outcome, details = kept(settings.out, answer["index"], verdict, lambda: made)
    outcome.strategy, outcome.seconds = answer["strategy"], answer["seconds"]
    outcome.arm = answer.get("arm", "")
    return outcome, details or answer.get("details", "")


def _worker_kill(settings: Settings, index: int) -> tuple[Outcome, str]:
    """The case that twice took its actor down with it: kept as a finding, never run again; a
    failure to save it is its harness error (and a full disk stops the campaign), as in
    ``_outcome``."""
    verdict = Verdict(Kind.WORKER_KILL, draw=0, message=f"the actor running case {index} died "
                                                        f"or hung {KILLS_TO_FINDING} times")
    made: dict = {}

    def file() -> tuple[str, bytes]:
        case, task = make_case(settings, index)
        made.update(strategy=case.origin.get("strategy", ""), arm=arm_of(case.origin))
        found = kept_case(settings, case, task, verdict)
        assert found is not None  # a worker kill is a finding: always kept
        return found.file_name(), found.to_bytes()

    outcome, details = kept(settings.out, index, verdict, file)
    outcome.strategy, outcome.arm = made.get("strategy", ""), made.get("arm", "")
    return outcome, details

"""The night's pipeline beside fuzzing: the backpressure rule, fingerprints and buckets, the
member check both ways, the backlog's order and parking, scaled timeouts for hung candidates
and knob runs, export's refusal of aliased written arguments, the default worker count, and
one night whose lanes process planted raw findings by bucket beside its campaign."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from fuzzer.corpus.case import Case
from fuzzer.execute import calling, workers
from fuzzer.execute.pool import OutOfTime, RunnerPool, Spread, scaled_timeout
from fuzzer.execute.task import RunResult
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import Verdict
from fuzzer.nightly import pipeline
from fuzzer.nightly.backlog import PARK_AFTER, Backlog
from fuzzer.nightly.buckets import Check, Settled, check_member, fingerprint, message_stem
from fuzzer.nightly.job import run_night
from fuzzer.nightly.lanes import processing_lanes
from fuzzer.nightly.summary import settled_as
from fuzzer.reduce.minimize import Oracle
from fuzzer.report.store import Store
from fuzzer.triage.attribute import flip, knob_named
from tests import triage_fakes as tf
from tests.conftest import night_settings

UINT8 = "tests.fakes:uint8_plus_one"
UNLESS_EMULATE = "tests.triage_fakes:plant_unless_emulate"


def planted(runner, backend: str, scale: float) -> Case:
    case = tf.planted_case(backend, runner, scale=scale)
    assert case.verdict is not None and case.verdict.kind == Kind.INT_FLIP
    return case


def saved(case: Case, corpus: Path, age: int) -> Path:
    """``case`` in ``corpus``, ``age`` seconds after the epoch's millionth (oldest first)."""
    path = case.save(corpus / case.file_name())
    os.utime(path, (1_000_000 + age, 1_000_000 + age))
    return path


# ------------------------------------------------------------------ the rules


def test_backpressure_moves_lanes_to_processing_only_while_work_waits():
    assert processing_lanes(4, waiting=0, urgent=0, fuzzing=True) == 0
    assert processing_lanes(4, waiting=3, urgent=0, fuzzing=True) == 2  # half fuzz on
    assert processing_lanes(1, waiting=3, urgent=0, fuzzing=True) == 1
    assert processing_lanes(4, waiting=3, urgent=1, fuzzing=True) == 4  # class 1-2: all lanes
    assert processing_lanes(4, waiting=1, urgent=0, fuzzing=False) == 4  # draining
    assert processing_lanes(4, waiting=0, urgent=0, fuzzing=False) == 0


def test_default_cpu_workers_follow_cores_and_memory():
    gib = 1 << 30
    assert workers.default_cpu_workers(cores=16, memory_bytes=128 * gib) == 16
    assert workers.default_cpu_workers(cores=16, memory_bytes=12 * gib) == 4  # memory binds
    assert workers.default_cpu_workers(cores=2, memory_bytes=24 * gib) == 2
    assert workers.default_cpu_workers(cores=2, memory_bytes=1 * gib) == 1  # never none
    assert workers.default_cpu_workers(cores=3, memory_bytes=None) == 3  # memory unreadable


def test_the_default_worker_count_can_be_set_for_a_machine(monkeypatch):
    monkeypatch.setenv(workers.WORKERS_ENV, "3")
    assert workers.default_workers("cpu") == 3
    monkeypatch.setenv(workers.WORKERS_ENV, "none")  # not a count: the machine's default
    assert workers.default_workers("cpu") == workers.default_cpu_workers()


def test_scaled_timeout_grows_with_the_case_and_has_a_floor():
    assert scaled_timeout(0.5) == 20.0
    assert scaled_timeout(30.0) == 100.0


def test_settled_columns_read_the_backlog_outcomes():
    assert settled_as("bucket hit on 0123: showed its divergence again") == "bucket hit"
    assert settled_as("known: minimum-signed-zero") == "known"
    assert settled_as("parked: error: RuntimeError") == "parked"
    assert settled_as("not reproducible: flaky") == "not reproducible"
    assert settled_as("0123456789abcdef") == "cause"


# ------------------------------------------------------------------ fingerprints


def test_one_bug_on_two_programs_shares_a_fingerprint_and_other_kinds_do_not(fake_runner):
    a, b = planted(fake_runner, UINT8, 3.0), planted(fake_runner, UINT8, 5.0)
    assert a.digest() != b.digest()
    assert fingerprint(a) == fingerprint(b)
    assert "e8m0 < mul_scalar" in fingerprint(a).describe()
    crash = tf.judged_case(tf.e8m0_graph(), a.inputs, "tests.fakes:raises", fake_runner)
    assert crash.verdict.kind == Kind.CRASH
    assert fingerprint(crash) != fingerprint(a)
    other_backend = planted(fake_runner, UNLESS_EMULATE, 3.0)  # the same program, another bug
    assert fingerprint(other_backend) != fingerprint(a)
    assert fingerprint(Case(graph=a.graph, inputs=a.inputs, verdict=None)) is None


def test_a_crash_message_stem_keeps_the_words_and_drops_what_varies():
    one = message_stem("AssertionError: expected size 12 got 7 for 'buf3' (at x.py:3)")
    two = message_stem("AssertionError: expected size 48 got 2 for 'buf19' (at y.py:9)")
    assert one == two and "expected size" in one
    assert message_stem("RuntimeError: boom") != message_stem("RuntimeError: bang")


# ------------------------------------------------------------------ the member check


def test_a_member_is_a_hit_only_when_the_telling_knob_does_what_it_did(fake_runner):
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    cause = Settled("feedc0ffee000001", knob="emulate_precision_casts", outcome="vanishes")
    alike = check_member(planted(fake_runner, UNLESS_EMULATE, 5.0), cause, pool)
    assert alike.hit and alike.runs == 2 and "emulate_precision_casts vanishes" in alike.how
    other = check_member(planted(fake_runner, UINT8, 5.0), cause, pool)
    assert not other.hit and other.sub == "emulate_precision_casts=persists"


def test_the_telling_knob_is_the_first_that_vanished_else_the_ablation():
    attribution = {"knobs": [{"knob": "emulate_precision_casts", "outcome": "persists"},
                             {"knob": "cpp.simdlen=0", "outcome": "vanishes"},
                             {"knob": "backend=aot_eager", "outcome": "vanishes"}]}
    assert Settled.of("s", attribution).knob == "cpp.simdlen=0"
    attribution["knobs"][1]["outcome"] = "persists"
    assert (Settled.of("s", attribution).knob, Settled.of("s", attribution).outcome) == \
        ("backend=aot_eager", "vanishes")
    assert Settled.of("s", {}).knob == ""


# ------------------------------------------------------------------ the backlog


@pytest.fixture
def corpus(fake_runner, tmp_path):
    """Two raw cases of one bucket (class 1) and a crash (class 3), the crash oldest."""
    root = tmp_path / "corpus"
    crash = tf.judged_case(tf.e8m0_graph(), planted(fake_runner, UINT8, 3.0).inputs,
                           "tests.fakes:raises", fake_runner)
    files = {"crash": saved(crash, root, 0),
             "a": saved(planted(fake_runner, UINT8, 3.0), root, 1),
             "b": saved(planted(fake_runner, UINT8, 5.0), root, 2)}
    return root, files


def test_the_backlog_serves_value_first_one_representative_per_bucket(corpus, tmp_path):
    root, files = corpus
    with Store.in_reports(tmp_path / "reports") as store:
        backlog = Backlog(root, "2030-01-01#1", max_representatives=10)
        assert backlog.refresh(store, set()) == []
        first = backlog.take()
        assert (first.item.path, first.check) == (files["a"], False)  # class 1 before 3
        second = backlog.take()  # b waits for a's cause: the crash is next
        assert (second.item.path, second.check) == (files["crash"], False)
        assert backlog.take() is None
        backlog.settle(first, "feedc0ffee000001", Settled("feedc0ffee000001"))
        third = backlog.take()
        assert (third.item.path, third.check) == (files["b"], True)
        backlog.settle(third, "bucket hit on feedc0ffee000001")
        backlog.settle(second, "crash cause")
        assert backlog.left() == 0
        rows = {r["representative"]: r for r in backlog.rows()}
        assert rows[files["a"].name]["members"][files["b"].name].startswith("bucket hit")


def test_a_case_failing_twice_is_parked_and_the_least_attempted_goes_first(corpus, tmp_path):
    root, files = corpus
    a, b = files["a"].name, files["b"].name
    with Store.in_reports(tmp_path / "reports") as store:
        backlog = Backlog(root, "2030-01-01#1", max_representatives=10)
        backlog.refresh(store, set())
        work = backlog.take()
        assert work.item.key == a  # the older of two untried cases of one bucket
        store.attempt(a)
        assert backlog.fail(work, store, "error: planted") is False
        stand_in = backlog.take()  # a failed tonight: its bucket's next member stands in
        assert stand_in.item.key == b and not stand_in.check

        backlog = Backlog(root, "2030-01-02#1", max_representatives=10)
        backlog.refresh(store, set())
        work = backlog.take()
        assert work.item.key == b  # tried 0 times against a's 1: the least attempted first
        store.attempt(b)
        assert backlog.fail(work, store, "the minimizer stopped short") is False
        work = backlog.take()
        assert work.item.key == a
        store.attempt(a)
        assert backlog.fail(work, store, "error: planted") is True  # the second failure
        assert store.attempts(a) == (2, PARK_AFTER)
        assert backlog.rows()[0]["members"][a] == "parked: error: planted"
        assert backlog.take().item.key == files["crash"].name  # nothing of a's bucket left


def test_a_case_cut_by_the_deadline_is_not_handed_out_again_tonight(corpus, tmp_path):
    root, files = corpus
    with Store.in_reports(tmp_path / "reports") as store:
        backlog = Backlog(root, "2030-01-01#1", max_representatives=None)
        backlog.refresh(store, set())
        work = backlog.take()
        backlog.leave(work)
        again = backlog.take()
        assert again.item.key != work.item.key and not again.check
        assert store.attempts(work.item.key) == (0, 0)  # no attempt counted against it


def test_the_night_cap_counts_representatives_only(corpus, tmp_path):
    root, files = corpus
    with Store.in_reports(tmp_path / "reports") as store:
        backlog = Backlog(root, "2030-01-01#1", max_representatives=1)
        backlog.refresh(store, set())
        first = backlog.take()
        assert backlog.take() is None  # the crash's representative is over the cap
        backlog.settle(first, "sig", Settled("sig"))
        assert backlog.take().check  # a member's check is not
        assert backlog.waiting() == (0, 0)


# ------------------------------------------------------------------ knob runs shared out


def test_spread_jobs_run_on_the_helpers_pools_and_come_back_in_order():
    import threading

    spread = Spread()
    ran: dict[str, list[int]] = {"own": [], "helper": []}
    started = threading.Event()

    def job(n: int):
        def run(pool: str) -> int:
            started.set()
            ran[pool].append(n)
            threading.Event().wait(0.05)  # long enough for the helper to take some
            return n * n
        return run

    def helper():
        started.wait(5)
        while spread.help("helper"):
            pass

    thread = threading.Thread(target=helper)
    thread.start()
    assert spread.spread([job(n) for n in range(6)], "own", urgent=True) == \
        [n * n for n in range(6)]
    thread.join()
    assert ran["own"] and ran["helper"]  # both took some
    assert sorted(ran["own"] + ran["helper"]) == list(range(6))
    assert spread.waiting() == (0, 0)


def test_a_failing_spread_job_raises_in_the_caller():
    spread = Spread()

    def fails(pool):
        raise OutOfTime("the deadline came")

    with pytest.raises(OutOfTime):
        spread.spread([lambda pool: 1, fails], "own")
    assert spread.waiting() == (0, 0)


class Counting:
    """A runner that answers every run with one verdict, counting them."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict, self.runs = verdict, 0

    def run(self, task, timeout=None):
        self.runs += 1
        return RunResult(self.verdict)

    def close(self):
        pass


def test_the_k_of_k_checks_go_through_the_spread_when_one_is_given(fake_runner):
    case = planted(fake_runner, UINT8, 3.0)
    own, other = Counting(case.verdict), Counting(case.verdict)
    oracle = Oracle(case.verdict, own)
    oracle.spread, oracle.pool = Spread(), RunnerPool({"cpu": other}, warmup=False)
    assert len(oracle.reproduce(case, 3)) == 3 and oracle.calls == 3
    assert (own.runs, other.runs) == (0, 3)  # the pool's runners: a helper would use its own
    oracle.spread = None
    oracle.reproduce(case, 2)
    assert own.runs == 2


# ------------------------------------------------------------------ hung runs


class Hangs:
    """A runner whose every run hangs past the timeout it is given."""

    def run(self, task, timeout=None):
        return RunResult(Verdict(Kind.TIMEOUT, message="no answer before the per-case timeout"))

    def close(self):
        pass


def test_a_hung_candidate_is_dropped_neither_interesting_nor_a_slip(fake_runner, tmp_path):
    case = planted(fake_runner, UINT8, 3.0)
    oracle = Oracle(case.verdict, Hangs(), corpus=tmp_path)
    oracle.timeout = 20.0
    assert oracle(case) is False
    assert oracle.dropped == 1 and oracle.slips == [] and not list(tmp_path.iterdir())
    oracle.timeout = None  # without the scaled timeout a timeout verdict is a slip
    assert oracle(case) is False and len(oracle.slips) == 1


def test_a_hung_knob_run_is_an_error_not_a_change(fake_runner):
    case = planted(fake_runner, UINT8, 3.0)
    pool = RunnerPool({"cpu": Hangs()}, warmup=False)
    hung = flip(case, knob_named("emulate_precision_casts"), pool, k=3, timeout=20.0)
    assert hung.outcome == "error" and hung.verdict.startswith("hung")
    assert flip(case, knob_named("emulate_precision_casts"), pool, k=1).outcome == "changes"


# ------------------------------------------------------------------ export


class ExportedFailing:
    """What torch 2.15 does with aliased inputs it writes: export goes through, and
    ``run_decompositions`` (which traces again) asserts."""

    def run_decompositions(self):
        raise AssertionError("expected compiled_fn to be GraphModule, got <class 'function'>")


class Holder(torch.nn.Module):
    def __init__(self, state: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("s0", state)


def test_export_failing_on_aliased_inputs_is_a_refusal_and_otherwise_a_crash(monkeypatch):
    monkeypatch.setattr(torch.export, "export", lambda module, args: ExportedFailing())
    x = torch.ones(4, 4)
    with pytest.raises(calling.ExportRefused, match="share storage"):
        calling.exporting(torch.nn.Identity(), (x, x[1:]), decompose=True)
    with pytest.raises(calling.ExportRefused, match="share storage"):  # a buffer and an argument
        calling.exporting(Holder(x), (x.t(),), decompose=True)
    with pytest.raises(AssertionError):  # no aliasing: a crash stays a crash
        calling.exporting(torch.nn.Identity(), (x, torch.ones(3)), decompose=True)
    assert isinstance(calling.exporting(torch.nn.Identity(), (x, x)), ExportedFailing)
    assert not calling.share_storage((torch.ones(0), torch.ones(0)))


# ------------------------------------------------------------------ a night


def test_a_night_processes_raw_findings_by_bucket_beside_its_campaign(fake_runner, tmp_path,
                                                                     few_knobs, monkeypatch):
    """Four raw cases: three of one bucket (one planted bug), one of another backend (another
    bug, another bucket). The oldest of the first bucket is minimized and triaged; the next
    member is a hit on its cause after its check; the third fails its check (planted here: the
    check itself is tested above) and leaves for a sub-bucket, where it is processed in full;
    the other backend's case is processed in full. All before the campaign ends: class-1 work
    takes the one lane from fuzzing."""
    reports = tmp_path / "reports"
    corpus = reports / "corpus"
    first = saved(planted(fake_runner, UINT8, 3.0), corpus, 0)
    member = saved(planted(fake_runner, UINT8, 5.0), corpus, 1)
    other = saved(planted(fake_runner, UNLESS_EMULATE, 7.0), corpus, 2)
    leaving = saved(planted(fake_runner, UINT8, 9.0), corpus, 3)
    real = pipeline.check_member

    def check(case, settled, pool, timeout=None):
        if case.file_name() == leaving.name:
            return Check(False, "planted: the knob did otherwise", 1, "planted=otherwise")
        return real(case, settled, pool, timeout)

    monkeypatch.setattr(pipeline, "check_member", check)
    settings = night_settings(reports=reports, device="cpu", cases=2, seed=1, k=1,
                              bisect=False, date="2030-04-01", backend="eager", max_drafts=0)
    lines: list[str] = []
    summary = run_night(settings, log=lines.append,
                        pool=RunnerPool({"cpu": fake_runner}, warmup=False))
    log = "\n".join(lines)
    fuzzed = next(i for i, line in enumerate(lines) if line.startswith("fuzzed "))
    mine = {first.name, member.name, other.name, leaving.name}  # the campaign finds its own too
    processed = [line.split(":")[0] for line in lines if ": processing" in line]
    assert [key for key in processed if key in mine] == [first.name, other.name, leaving.name], \
        log
    assert any(line.startswith(f"{member.name}: bucket hit on ") for line in lines[:fuzzed]), log
    assert f"{leaving.name}: leaves bucket" in log
    with Store.in_reports(reports) as store:
        assert store.attempts(first.name) == (1, 0) and store.attempts(member.name) == (0, 0)
        rows = {r["key"]: r["outcome"] for r in store.night_rows("2030-04-01#1")}
    assert rows[member.name].startswith("bucket hit on "), rows
    text = summary.read_text()
    assert "## The queue: raw findings to causes" in text
    assert "settled (100%)**" in text, text
    assert "planted=otherwise" in text  # the sub-bucket says why its member left

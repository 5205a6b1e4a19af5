"""The nightly's edges a review found: a minimized case that no longer reproduces is not a cause;
a case left short of its fixpoint waits for the next night rather than a second pass; a draft
claimed by a night that never wrote it is drafted by a later one; a garbled night.json or known
list is one line; a cause new tonight is not also recurring; a worker-kill finding that cannot be
saved is a harness error, not a traceback; a stopped fleet campaign starts nothing more."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from fuzzer.campaign import fleet, loop
from fuzzer.errors import InputError
from fuzzer.execute.pool import RunnerPool
from fuzzer.judge.kinds import Kind
from fuzzer.nightly import drafts, lanes, pipeline, summary
from fuzzer.nightly.backlog import served
from fuzzer.nightly.night import Context, Night, open_night
from fuzzer.nightly.pipeline import finding_for
from fuzzer.report.store import Store
from fuzzer.triage.known import entries
from tests import triage_fakes as tf
from tests.conftest import campaign_settings, night_settings


@pytest.fixture
def night(fake_runner, tmp_path):
    """A night's context over a corpus holding one planted finding."""
    reports = tmp_path / "reports"
    settings = night_settings(reports=reports, max_findings=5)
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    path = case.save(settings.corpus_dir / case.file_name())
    with Store.in_reports(reports) as store:
        yield Context(settings, Night("2030-01-02", 1, 1), reports / "2030-01-02", store,
                      RunnerPool({"cpu": fake_runner}), lambda line: None), case, path


@dataclass
class Minimized:
    case: object
    reliability: tuple[int, int]
    fixpoint: bool = True
    original_ops: int = 2
    final_ops: int = 2
    calls: int = 3
    seconds: float = 0.1
    final_elements: int = 1
    stopped: str = ""


def test_a_minimized_case_that_reproduces_0_of_k_is_no_cause(night, monkeypatch):
    ctx, case, path = night
    monkeypatch.setattr("fuzzer.reduce.minimize.minimize",
                        lambda start, *args, **kwargs: Minimized(start, (0, 3)))
    assert pipeline._process_one(ctx, path, path.name)
    assert ctx.store.findings() == []
    (row,) = ctx.store.night_rows(ctx.night.id)
    assert row["outcome"].startswith("not reproducible: the minimized case reproduced 0/3")


def test_a_case_left_short_tonight_is_not_started_again_the_same_night(night, monkeypatch):
    ctx, _, path = night
    started = []

    def left_short(ctx, path, key):
        started.append(key)  # the minimizer's budget ran out short of its fixpoint
        return pipeline.Result(pipeline.Ended.FAILED, "the minimizer stopped short of its fixpoint")

    monkeypatch.setattr(pipeline, "_process_one", left_short)
    lanes.process(ctx)
    assert started == [path.name] and ctx.night.backlog == 1
    assert ctx.store.attempts(path.name) == (1, 1)  # one failed attempt: not parked yet
    assert ctx.store.processed(ctx.night.id, path.name) is None


def test_a_draft_an_earlier_night_claimed_but_never_wrote_is_drafted_tonight(night, fake_runner,
                                                                             monkeypatch):
    ctx, case, path = night
    finding = finding_for(case, None, (1, 1))
    ctx.store.record(finding)
    earlier = str(ctx.settings.reports / "2030-01-01" / f"{finding.signature}.md")
    assert ctx.store.claim_draft(finding.signature, earlier)  # that night was killed here
    written = []
    monkeypatch.setattr(drafts, "write_draft_for",
                        lambda ctx, finding, path, *rest: written.append(path))
    assert ctx.drafts_owed() == 1
    drafts.write_pending_drafts(ctx)
    tonight = ctx.directory / f"{finding.signature}.md"
    assert written == [tonight]
    assert ctx.store.get(finding.signature).draft_path == str(tonight)
    assert not ctx.store.claim_draft(finding.signature, "elsewhere.md", previous=earlier)


def test_a_garbled_night_file_is_one_line(tmp_path):
    directory = tmp_path / "2030-01-01"
    directory.mkdir()
    for text in ("{not json", "[1, 2]", '{"date": "2030-01-01", "colour": "blue"}'):
        (directory / "night.json").write_text(text)
        with pytest.raises(InputError, match="move it aside"):
            open_night(night_settings(reports=tmp_path), directory, lambda line: None)


@pytest.mark.parametrize("text", ['[[known]]\nid = "a"\nwhat = "b"\ntorch = "~=2.5"\n',
                                  'known = ["x"]\n'])
def test_a_known_list_that_would_never_match_or_is_not_tables_is_refused(tmp_path, text):
    path = tmp_path / "known.toml"
    path.write_text(text)
    with pytest.raises(InputError, match="not a valid known-issues file"):
        entries(path)


def test_a_cause_new_tonight_is_not_also_recurring():
    rows = [{"signature": "a", "outcome": "new"}, {"signature": "a", "outcome": "recurring"},
            {"signature": "b", "outcome": "recurring"}]
    assert summary.recurring_tonight(rows) == ["b"]


def test_a_worker_kill_finding_that_cannot_be_saved_is_a_harness_error(tmp_path, monkeypatch):
    settings = campaign_settings(out=tmp_path / "corpus", seed=1)

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(loop, "save_new", full_disk)  # the one save path
    outcome, details = fleet._worker_kill(settings, 0)
    assert outcome.verdict.kind == Kind.SKIP and "harness error" in outcome.verdict.message
    assert outcome.unwritable and "No space left" in details
    assert outcome.path is None and Path(tmp_path / "corpus").exists() is False


def test_batches_a_lost_actor_handed_back_are_not_run_once_the_campaign_stops():
    """A full disk stopped the campaign while a dead actor's cases waited to be run again: they
    are dropped (the ledger leaves them to --resume), not started after "stopped at case N"."""
    from collections import deque

    ran = []

    class Actor:
        class run_case:  # noqa: N801  (Ray's spelling: actor.method.remote(...))
            @staticmethod
            def remote(index):
                ran.append(index)
                return object()

    lost = fleet.Fleet.__new__(fleet.Fleet)  # no Ray here: only its queue and one slot
    lost.slots, lost.queue = [fleet.Slot(Actor())], deque([fleet.Batch([3, 4])])
    lost.feed(lambda: None, halted=lambda: True)
    assert ran == [] and not lost.queue
    lost.queue.append(fleet.Batch([3, 4]))
    lost.feed(lambda: None)  # still running: the handed-back batch goes first
    assert ran == [3, 4]


def test_a_stage_a_kill_cut_short_counts_its_time_on_resume(tmp_path):
    """Killed ten minutes into minimizing (last saved then): the resumed night counts those ten
    minutes, so it ends when the whole night should, not ten minutes late."""
    import json

    from fuzzer.nightly.night import Night

    directory = tmp_path / "2030-01-01"
    directory.mkdir()
    killed = Night("2030-01-01", 1, 7, stage="process", stage_seconds={"fuzz": 420.0},
                   timed_stage="minimize + triage", stage_since=1000.0)
    killed.save(directory)
    data = json.loads((directory / "night.json").read_text())
    data["saved_at"] = 1600.0  # the last save before the kill
    (directory / "night.json").write_text(json.dumps(data))
    resumed = open_night(night_settings(reports=tmp_path), directory, lambda line: None)
    assert resumed.stage_seconds == {"fuzz": 420.0, "minimize + triage": 600.0}
    assert resumed.timed_stage == "" and resumed.stage_since == 0.0


def test_a_night_minimizes_one_case_of_each_bucket_value_class_first(tmp_path) -> None:
    """By value class first (silent wrong values on ordinary inputs before crashes), and one
    representative per bucket: a night short of time once spent all of it on its non-finite
    findings and reached none of its 35 crashes (RESULTS §24). Crashes are told apart by
    exception type, innermost frames and message stem: 17 ``as_strided`` lowering errors are one
    bucket, settled by checks once one of them is minimized."""
    from fuzzer.judge.verdict import Verdict

    graph = tf.e8m0_graph()
    out = graph.outputs[0]
    made = {}

    def saved(name: str, verdict: Verdict) -> Path:
        case = tf.case_of_verdict(graph)
        case.verdict = verdict
        made[name] = case.save(tmp_path / f"{name}.pt")
        return made[name]

    lowering = ["torch/_inductor/lowering.py:as_strided"]
    bounds = "InductorError: LoweringException: as_strided requires {} elements"
    files = [saved("bounds1", Verdict(Kind.CRASH, message=bounds.format(290), frames=lowering)),
             saved("nonfinite1", Verdict(Kind.NONFINITE, 0, out)),
             saved("bounds2", Verdict(Kind.CRASH, message=bounds.format(65), frames=lowering)),
             saved("compile", Verdict(Kind.CRASH, message="InductorError: CppCompileError",
                                      frames=["torch/_inductor/cpp_builder.py:build"])),
             saved("nonfinite2", Verdict(Kind.NONFINITE, 0, out)),
             saved("flip", Verdict(Kind.INT_FLIP, 0, out)),
             saved("nonfinite3", Verdict(Kind.NONFINITE, 0, out))]
    with Store.in_reports(tmp_path / "reports") as store:
        order = [p.stem for p in served(tmp_path, store)]
    # Value class first; one bucket per divergence (the two as_strided crashes differ only in a
    # number: one bucket), its members' cheap checks as soon as its representative settled.
    assert order == ["nonfinite1", "nonfinite2", "nonfinite3", "flip", "bounds1", "bounds2",
                     "compile"], order
    assert len(files) == len(order)

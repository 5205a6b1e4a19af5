"""Unattended nights (issue 24): one case's or one finding's failure never ends a campaign or a
night; it is a counted harness error, saved for replay; a run stops early, in one line and exit
2, only by the stop rule or when every worker is gone; workers are recycled and leave no files.

Failures are planted by wrapping numfuzz's own functions (generation, saving, the worker loop,
triage), the fake backends keep compiles out of it, and the campaigns are a few cases long."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fuzzer.campaign import harness, local
from fuzzer.campaign.local import run_campaign
from fuzzer.campaign.settings import make_case
from fuzzer.cli import main
from fuzzer.corpus.case import Case
from fuzzer.execute.pool import RunnerPool
from fuzzer.execute.workers import TEMP_PREFIX, LocalRunner, Recycle, sweep_stale_temp
from fuzzer.nightly import drafts, pipeline, recheck
from fuzzer.nightly.job import run_night
from fuzzer.nightly.night import latest_night
from fuzzer.report.store import Store
from tests import triage_fakes as tf
from tests.conftest import campaign_settings, ledger_of, night_settings

EAGER = dict(device="cpu", backend="eager", seed=8, dtypes=("float32",), draws=1, workers=1)


def planting(monkeypatch, name: str, fails: set[int] | None = None) -> None:
    """``campaign.local.<name>`` raises for the case indices in ``fails`` (all when None); it
    takes the settings, then a case index or what ran for one (``local.Ran``)."""
    real = getattr(local, name)

    def wrapped(settings, item, *rest):
        index = getattr(item, "index", item)
        if hasattr(item, "origin"):  # a case: its index in the campaign
            index = item.origin.get("index")
        if fails is None or index in fails:
            raise RuntimeError(f"planted failure in {name} of case {index}")
        return real(settings, item, *rest)

    monkeypatch.setattr(local, name, wrapped)


# ------------------------------------------------------------------ the stop rule


def test_the_stop_rule_counts_the_last_window_only() -> None:
    log = harness.HarnessLog(Path(tempfile.mkdtemp()))
    needed = int(harness.LIMIT * harness.WINDOW)
    for _ in range(needed - 1):
        log.record("planted")
    assert not log.tripped()
    for _ in range(harness.WINDOW):  # a long clean stretch pushes the errors out of the window
        log.ok()
    log.record("planted")
    assert not log.tripped() and log.count == needed
    for _ in range(needed - 1):
        log.record("planted")
    assert log.tripped() and "harness errors in the last" in log.stop_message()


def test_a_record_that_cannot_be_written_is_still_counted(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    log = harness.HarnessLog(blocker / "harness")  # mkdir under a file fails, as a full disk
    assert log.record("planted") is None
    assert log.count == 1 and log.unsaved == 1 and log.messages == ["planted"]
    assert "Error" in log.unsaved_because  # why, for the campaign's summary to say


# ------------------------------------------------------------------ one case, one error


def test_a_case_that_fails_to_generate_or_save_is_counted_and_the_campaign_goes_on(
        monkeypatch, tmp_path: Path) -> None:
    planting(monkeypatch, "make_case", {1})
    planting(monkeypatch, "kept_case", {3})
    out = tmp_path / "corpus"
    summary = run_campaign(campaign_settings(out=out, cases=6, **EAGER))
    assert summary.cases == 6 and summary.harness_errors == 2 and not summary.stopped
    assert "generating: RuntimeError: planted failure in make_case of case 1" in \
        summary.harness_messages[0]
    assert "saving: RuntimeError: planted failure in kept_case of case 3" in \
        summary.harness_messages[1]
    notes = sorted((out / harness.DIRECTORY).glob("*.json"))
    where = [json.loads(n.read_text())["where"]["index"] for n in notes]
    assert where == [1, 3]
    # case 3 was generated and run: its case file replays; case 1 has its seed and index only
    third = json.loads(notes[1].read_text())
    saved = Case.load(out / harness.DIRECTORY / third["case_file"])
    assert saved.origin["index"] == 3 and "planted failure" in third["details"]
    state = ledger_of(out)
    assert state["below"] == 6  # harness errors are marked done: a resume does not loop on them


def test_the_stop_rule_ends_a_run_in_one_line_with_exit_2(monkeypatch, tmp_path: Path) -> None:
    planting(monkeypatch, "make_case")  # every case fails: the worker never even starts
    out = tmp_path / "corpus"
    result = CliRunner().invoke(main, ["run", "--device", "cpu", "--backend", "eager",
                                       "--cases", "500", "--out", str(out), "--json"])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1].startswith("numfuzz: error: campaign stopped: 10 "
                                                     "harness errors in the last 10 cases")
    assert "Traceback" not in result.output
    summary = json.loads(result.stdout)
    assert summary["harness_errors"] == summary["cases"] < 500 and summary["stopped"]
    assert len(list((out / harness.DIRECTORY).glob("*.json"))) == summary["cases"]


def test_every_worker_gone_is_one_line_and_exit_2(monkeypatch, tmp_path: Path) -> None:
    def broken(*args):
        raise RuntimeError("planted: the worker loop itself is broken")

    monkeypatch.setattr(local, "run_one", broken)
    result = CliRunner().invoke(main, ["run", "--device", "cpu", "--backend", "eager",
                                       "--cases", "5", "--workers", "2",
                                       "--out", str(tmp_path / "corpus")])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("numfuzz: error: campaign stopped: every worker is gone; worker ")
    assert "RuntimeError: planted: the worker loop itself is broken" in line
    assert "worker 0 stopped" in result.stdout and "worker 1 stopped" in result.stdout


# ------------------------------------------------------------------ workers


def test_workers_are_recycled_by_count_and_memory_and_leave_nothing(tmp_path: Path) -> None:
    settings = campaign_settings(out=tmp_path, **EAGER)
    _, task = make_case(settings, 0)
    fds_before = len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else None
    runner = LocalRunner("cpu", timeout=120, warmup=False, recycle=Recycle(cases=2, rss_bytes=None))
    pids, caches = [], []
    try:
        for _ in range(4):
            runner.start()
            pids.append(runner.worker.proc.pid)
            caches.append(runner.worker.cache)
            assert runner.run(task).verdict.kind in ("ok", "skip")
    finally:
        runner.close()
    assert pids[0] == pids[1] != pids[2] == pids[3] and runner.recycled == 2
    assert all(c is not None and c.name.startswith(f"{TEMP_PREFIX}{os.getpid()}-")
               for c in caches)
    assert not any(c.exists() for c in caches)  # each private cache went with its worker
    if fds_before is not None:  # no descriptor of the three workers stays open here
        assert len(os.listdir("/proc/self/fd")) == fds_before

    greedy = LocalRunner("cpu", timeout=120, warmup=False,
                    recycle=Recycle(cases=None, rss_bytes=1, private_cache=False))
    try:
        greedy.run(task)
        assert greedy.worker is None and greedy.recycled == 1  # over the limit: replaced
    finally:
        greedy.close()


def test_stale_temp_files_of_a_dead_driver_are_swept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale_log = tmp_path / f"{TEMP_PREFIX}{dead}-abc.log"
    stale_cache = tmp_path / f"{TEMP_PREFIX}{dead}-def.cache"
    mine = tmp_path / f"{TEMP_PREFIX}{os.getpid()}-ghi.log"
    stale_log.write_text("x")
    (stale_cache / "inductor").mkdir(parents=True)
    mine.write_text("x")
    assert sweep_stale_temp(str(tmp_path)) == 2
    assert mine.exists() and not stale_log.exists() and not stale_cache.exists()


# ------------------------------------------------------------------ a night


def test_a_finding_that_fails_triage_is_a_harness_error_of_a_night_that_goes_on(
        monkeypatch, fake_runner, tmp_path: Path, few_knobs) -> None:
    reports = tmp_path / "reports"
    for scale in (3.0, 5.0):  # two findings: the first fails in triage, the second goes through
        case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner, scale=scale)
        case.save(reports / "corpus" / case.file_name())
    real = pipeline.cause_of
    calls = []

    def attribute_once_broken(case, *args, **kwargs):
        calls.append(case)
        if len(calls) == 1:
            raise KeyError("planted triage bug")
        return real(case, *args, **kwargs)

    monkeypatch.setattr(pipeline, "cause_of", attribute_once_broken)
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1,
                             bisect=False, date="2030-02-01", dtypes=("float32",),
                             backend="eager")
    lines: list[str] = []
    path = run_night(settings, log=lines.append, pool=RunnerPool({"cpu": fake_runner},
                                                                  warmup=False))
    night = latest_night(reports)
    assert night.status == "done" and night.harness_errors == 1 and night.exit_status == 1
    assert "processing: KeyError: 'planted triage bug'" in night.harness_messages[0]
    summary = path.read_text()
    assert "## Harness errors: 1" in summary and "Clean night" not in summary
    assert len(calls) == 2, lines  # the second finding was still triaged
    notes = list((reports / "corpus" / harness.DIRECTORY).glob("*.json"))
    assert len(notes) == 1 and "planted triage bug" in notes[0].read_text()
    shown = CliRunner().invoke(main, ["findings", "--reports", str(reports)])
    assert "last night 2030-02-01#1 (done): 1 harness errors" in shown.output, shown.output


def test_a_clean_night_says_so(fake_runner, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    settings = night_settings(reports=reports, device="cpu", cases=2, seed=1, k=1,
                             bisect=False, date="2030-02-02", dtypes=("float32",),
                             backend="eager")
    path = run_night(settings, log=lambda line: None,
                     pool=RunnerPool({"cpu": fake_runner}, warmup=False))
    assert "**Clean night**: no harness errors." in path.read_text()
    assert latest_night(reports).exit_status == 0


@pytest.mark.parametrize("stage", ["drafting", "recheck"])
def test_drafting_and_recheck_failures_are_counted(monkeypatch, fake_runner, tmp_path: Path,
                                                   stage: str, few_knobs) -> None:
    reports = tmp_path / "reports"
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    case.save(reports / "corpus" / case.file_name())
    module, target = (drafts, "write_draft_for") if stage == "drafting" else \
        (recheck, "_recheck_one")

    def broken(*args, **kwargs):
        raise OSError(f"planted {stage} failure")

    monkeypatch.setattr(module, target, broken)
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1,
                             bisect=False, dtypes=("float32",), backend="eager")
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    settings.date = "2030-02-03"
    run_night(settings, log=lambda line: None, pool=pool)
    if stage == "recheck":  # a second night rechecks the first night's finding
        time.sleep(1.1)  # started after it was last seen (timestamps have second resolution)
        settings.date = "2030-02-04"
        run_night(settings, log=lambda line: None, pool=pool)
    night = latest_night(reports)
    assert night.status == "done" and night.harness_errors >= 1
    assert any(f"planted {stage} failure" in m for m in night.harness_messages)


def test_a_finding_whose_triage_meets_the_deadline_waits_for_the_next_night(
        monkeypatch, fake_runner, tmp_path: Path) -> None:
    """Triage asks the night's deadline before each knob; cut short, the case file stays
    unprocessed (tomorrow starts it again) and is neither an error nor half a signature."""
    reports = tmp_path / "reports"
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    case.save(reports / "corpus" / case.file_name())
    real = pipeline.cause_of
    monkeypatch.setattr(pipeline, "cause_of",
                        lambda *args, **kwargs: real(*args, **{**kwargs, "stop": lambda: True}))
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1,
                             bisect=False, date="2030-02-05", dtypes=("float32",),
                             backend="eager")
    path = run_night(settings, log=lambda line: None,
                     pool=RunnerPool({"cpu": fake_runner}, warmup=False))
    night = latest_night(reports)
    assert night.backlog == 1 and night.harness_errors == 0
    text = path.read_text()
    assert "## Left for the next night: 1 case files" in text
    assert f"{case.file_name()}: the night's time ran out" in text
    with Store.in_reports(reports) as store:
        assert store.processed(night.id, case.file_name()) is None and not store.findings()


def test_a_hook_that_raises_is_a_harness_error_not_the_campaigns_end(tmp_path: Path) -> None:
    """The nightly's ledger or a progress bar failing on one case (a full disk) goes on."""
    seen = []

    def flaky_hook(outcome) -> None:
        seen.append(outcome.index)
        if len(seen) == 2:
            raise OSError(28, "No space left on device")

    summary = run_campaign(campaign_settings(out=tmp_path / "corpus", cases=4, **EAGER),
                                    on_outcome=flaky_hook)
    assert summary.cases == 4 and len(seen) == 4 and summary.harness_errors == 1
    assert "reporting: OSError" in summary.harness_messages[0]


@pytest.mark.parametrize("name", ["harness_int_floordiv_compare",
                                  "harness_bool_compare_of_float_all"])
def test_cases_real_nights_saved_as_harness_errors_now_judge(fake_runner, name: str) -> None:
    """Two integer-strategy cases real nights saved under ``harness/``, each a crash of the
    judge measuring a head's evidence in ulps of a dtype that has none (``torch.finfo`` of an
    integer or bool dtype): ``int64 // 0.3`` compared with a bool (the one-hour soak; a jump is
    now measured in the float dtype the step computes in), and ``all(a / b) & m < k`` (a 10-minute
    night; a head whose inputs hold no floats, though floats feed them further up, has no
    distance to measure: no evidence source, so its flips are graded without one). Both replay
    to a verdict, through the repro's rules too."""
    from fuzzer.corpus.replay import replay_case
    from fuzzer.judge import semantics

    case = Case.load(Path(__file__).parent / "data" / f"{name}.pt")
    assert case.origin["strategy"] == "integer" and "harness error" in case.verdict.message
    # the judge is what failed; any backend reaches it
    case.recipe = case.recipe.with_knob(backend="eager")
    verdict = replay_case(case, runner=fake_runner).verdict
    assert not harness.is_harness_error(verdict) and verdict.kind == "ok", verdict.summary()
    for out in case.graph.outputs:  # what repro.py is told of the head is measurable too
        source = semantics.evidence_source(case.graph, out)
        if isinstance(source, tuple):
            assert semantics.working_dtype(case.graph, source[0]).is_floating_point

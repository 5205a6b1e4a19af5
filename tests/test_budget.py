"""The night's time budget, kept by every stage whatever is in flight at the deadline: a worker
run, a subprocess, the bisector are cut there and never judged; minimizing and triaging leave
their drafts the time those need; what a deadline cut is carried on the next night.

A test of what a budget decides runs on the simulated clock (``sim_clock``: a worker run or a
subprocess costs a fixed number of its seconds), so it decides the same way however fast or
loaded the machine is, and asserts on that clock and on what was recorded and drafted. Real
time is kept only where a real wait is what is tested (a hang cut at its deadline), with bounds
far from both the deadline and the time the work would take uncut. Planted fakes that hang
stand in for slow compiles: no test here waits long."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fuzzer import clock
from fuzzer.corpus.case import Case
from fuzzer.execute.pool import OutOfTime, RunnerPool
from fuzzer.execute.recipe import Recipe
from fuzzer.nightly import drafts, night, pipeline
from fuzzer.nightly.job import run_night
from fuzzer.nightly.night import Context, Night
from fuzzer.nightly.pipeline import finding_for
from fuzzer.report import environment
from fuzzer.report.store import Store
from fuzzer.triage.attribute import run_bisect
from tests import triage_fakes as tf
from tests.conftest import campaign_settings, night_settings


def test_a_run_in_flight_at_the_deadline_is_cut_and_never_judged(fake_runner):
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    hanging = case.task(recipe=Recipe("tests.fakes:hang"))
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    start = time.monotonic()
    with pytest.raises(OutOfTime, match="in flight"):  # not a timeout verdict: no finding
        pool.until(start + 2).get("cpu").run(hanging)
    assert time.monotonic() - start < 30  # at the deadline, not the runner's own 60 s timeout
    with pytest.raises(OutOfTime, match="before this run"):
        pool.until(time.monotonic() - 1).run(case.task())
    assert pool.until(time.monotonic() + 60).run(case.task()).verdict.kind == "int-flip"


def test_on_the_simulated_clock_a_run_costs_its_time_and_one_past_the_deadline_is_cut(
        fake_runner, sim_clock):
    """A run that fits what is left costs its 1 s and is judged; one that costs more is cut at
    the deadline (the clock there, ``OutOfTime``); a hang is cut after ``patience`` real
    seconds, at its deadline on the clock."""
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)  # 1 s, no deadline
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    start = clock.now()
    deadline = start + 1.5
    assert pool.until(deadline).run(case.task()).verdict.kind == "int-flip"
    assert clock.now() == start + 1
    with pytest.raises(OutOfTime, match="in flight"):  # 1 s of work, 0.5 s left
        pool.until(deadline).run(case.task())
    assert clock.now() == deadline
    with pytest.raises(OutOfTime, match="before this run"):
        pool.until(deadline).run(case.task())
    sim_clock.patience = 3.0
    hanging = case.task(recipe=Recipe("tests.fakes:hang"))
    with pytest.raises(OutOfTime, match="in flight"):
        pool.until(deadline + 10).run(hanging)
    assert clock.now() == deadline + 10
    assert sim_clock.events[clock.RUN] == 4  # the one never started cost nothing


def test_a_campaign_spends_its_time_budget_on_the_budget_clock(tmp_path, sim_clock):
    """``--time`` (and the nightly's fuzzing share) is counted on the budget clock: at 1 s a
    run, a one-worker campaign of 3 s runs 3 cases and starts none once the time is spent."""
    from fuzzer.campaign.local import run_campaign

    summary = run_campaign(campaign_settings(out=tmp_path, seconds=3, seed=1, workers=1,
                                             backend="eager", dtypes=("float32",)))
    assert summary.cases == 3 and summary.elapsed == 3.0


def test_subprocesses_end_by_the_time_they_are_given(fake_runner, tmp_path):
    inductor_case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)  # before timing
    inductor_case.recipe = Recipe("inductor")
    script = tmp_path / "slow.py"
    script.write_text("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    start = time.monotonic()
    code, output = drafts.run_snippet(script, timeout=2)
    assert code is None and "no answer within 2s" in output
    assert time.monotonic() - start < 30  # cut at 2 s, not after the script's 60
    start = time.monotonic()
    result = run_bisect(inductor_case, timeout=1)
    assert result["status"] == "timeout"
    assert time.monotonic() - start < 30


def test_on_the_simulated_clock_a_subprocess_costs_its_time_and_one_past_its_limit_is_cut(
        sim_clock, tmp_path):
    script = tmp_path / "quick.py"
    script.write_text("print('quick')\n")
    start = clock.now()
    assert drafts.run_snippet(script, timeout=10) == (0, "quick")
    assert clock.now() == start + sim_clock.costs[clock.SUBPROCESS] == start + 5
    code, output = drafts.run_snippet(script, timeout=3)  # 5 s of work, 3 s allowed: cut
    assert code is None and "no answer within 3s" in output
    assert clock.now() == start + 5 + 3


def test_processing_leaves_each_draft_owed_its_reserve(fake_runner, tmp_path):
    reports = tmp_path / "reports"
    settings = night_settings(reports=reports, max_drafts=5)
    with Store.in_reports(reports) as store:
        ctx = Context(settings, Night("2030-01-01", 1, 1), tmp_path, store,
                      RunnerPool({"cpu": fake_runner}), lambda line: None, deadline=1000.0)
        assert ctx.processing_deadline() == 1000.0 - night.DRAFT_RESERVE  # the case in flight
        store.record(finding_for(tf.planted_case("tests.fakes:uint8_plus_one", fake_runner),
                                 None, (1, 1)))
        assert ctx.drafts_owed() == 1
        assert ctx.processing_deadline() == 1000.0 - 2 * night.DRAFT_RESERVE
        settings.max_drafts = 0  # nothing will be drafted: nothing to keep time for
        assert ctx.processing_deadline() == 1000.0


def test_a_recheck_cut_at_the_deadline_is_not_a_harness_error(fake_runner, tmp_path):
    from fuzzer.nightly.job import _recheck_error
    from fuzzer.nightly.recheck import recheck

    reports = tmp_path / "reports"
    settings = night_settings(reports=reports)
    with Store.in_reports(reports) as store:
        case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
        finding = finding_for(case, None, (1, 1))
        finding.case_path = str(case.save(reports / "case.pt"))
        store.record(finding)
        pool = RunnerPool({"cpu": fake_runner}, warmup=False)
        errors: list[BaseException] = []
        done = recheck(store, pool.until(clock.now() - 1), k=1,
                       on_error=lambda sig, err: errors.append(err))
        assert done == [] and [type(e) for e in errors] == [OutOfTime]
        ctx = Context(settings, Night("2030-01-01", 1, 1), tmp_path, store, pool,
                      lambda line: None)
        _recheck_error(ctx, finding.signature, errors[0])
        assert ctx.night.harness_errors == 0  # rechecked another night, not an error
        _recheck_error(ctx, finding.signature, OSError("planted"))
        assert ctx.night.harness_errors == 1


def test_a_night_whose_triage_is_in_flight_at_the_deadline_ends_on_time(fake_runner, tmp_path,
                                                                        sim_clock):
    """The triage's pattern_matcher knob hangs: the night cuts it at its deadline, records
    nothing half-done, keeps the minimized case, and the next night triages and drafts it. On
    the simulated clock with the real reserves: the case is minimized to its fixpoint however
    loaded the machine; the hang is cut after 10 real seconds, at its deadline on the clock."""
    sim_clock.patience = 10.0
    reports = tmp_path / "reports"
    backend = "tests.triage_fakes:plant_or_hang"
    raw = tf.planted_case(backend, fake_runner)
    os.utime(raw.save(reports / "corpus" / raw.file_name()), (1_000_000, 1_000_000))
    # The night's own campaign finds nothing (eager): the planted case is its only work.
    # The lanes process it beside the campaign from the night's start, so the night is short
    # enough that its deadline, not the knob run's scaled timeout (20 s here), cuts the hang.
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1,
                              bisect=False, date="2030-03-01", seconds=55, fuzz_share=0.2,
                              max_findings=1, backend="eager")
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    hang = tf.hang_file()
    hang.touch()
    lines: list[str] = []
    start = clock.now()
    try:
        summary = run_night(settings, log=lines.append, pool=pool)
    finally:
        hang.unlink(missing_ok=True)
    assert clock.now() - start <= settings.seconds, "\n".join(lines)
    with Store.in_reports(reports) as store:
        assert store.findings() == []  # a cut triage is no attribution: nothing recorded
    kept = Case.load(reports / "corpus" / pipeline.CHECKPOINTS / raw.file_name())
    assert kept.origin["fixpoint"] is True  # minimized tonight, kept for tomorrow
    text = summary.read_text()
    assert "## Left for the next night: " in text
    assert f"{raw.file_name()}: the night's time ran out (the deadline came while a run was " \
           "in flight)" in text, text

    settings.seconds, settings.date = None, "2030-03-02"
    lines.clear()
    run_night(settings, log=lines.append, pool=pool)
    assert any("minimized already" in line for line in lines), "\n".join(lines)
    with Store.in_reports(reports) as store:
        drafted = [f for f in store.findings() if f.draft_path]
    assert drafted and Path(drafted[0].draft_path).is_file()
    assert not (reports / "corpus" / pipeline.CHECKPOINTS / raw.file_name()).exists()


def test_minimized_and_triaged_tonight_is_drafted_tonight(fake_runner, tmp_path, sim_clock,
                                                         monkeypatch):
    """More work than the night has time for: processing stops early enough that every cause it
    recorded is drafted tonight, in full, within the budget. On the simulated clock with the
    real reserves: a run costs 1 s and a subprocess 12 s (a fresh interpreter and a compile),
    so a draft needs 24 s of its 30 s reserve (on real time a loaded machine ran the night out
    while the minimizer was short of its fixpoint, and the test could not tell that from a
    broken reserve)."""
    sim_clock.costs[clock.SUBPROCESS] = 12.0
    monkeypatch.setattr(environment, "_ENV", [])  # collect_env runs (and costs) tonight, every time
    reports = tmp_path / "reports"
    backend = "tests.fakes:erf_quarter"
    for graph, inputs in tf.erf_through_heads():
        case = tf.judged_case(graph, inputs, backend, fake_runner)
        os.utime(case.save(reports / "corpus" / case.file_name()), (1_000_000, 1_000_000))
    # The night's own campaign finds nothing (eager): the five planted cases are its work.
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1,
                              bisect=False, date="2030-03-03", seconds=120, fuzz_share=0.1,
                              backend="eager")
    lines: list[str] = []
    start = clock.now()
    summary = run_night(settings, log=lines.append, pool=RunnerPool({"cpu": fake_runner},
                                                                    warmup=False))
    assert clock.now() - start <= settings.seconds, "\n".join(lines)
    text = summary.read_text()
    assert "## Left for the next night" in text  # there was more work than time …
    with Store.in_reports(reports) as store:
        findings = store.findings()
    assert findings, "\n".join(lines)  # … yet what was recorded is drafted
    assert all(f.draft_path and Path(f.draft_path).is_file() for f in findings), \
        "\n".join(lines)
    for finding in findings:  # whole drafts: the plain reproducer had the time to run …
        assert "It printed here; it shows the divergence" in Path(finding.draft_path).read_text()
    assert (summary.parent / "collect_env.txt").is_file()  # … and collect_env to finish
    assert "drafts wait for the next night" not in text

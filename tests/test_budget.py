"""The night's time budget, kept by every stage whatever is in flight at the deadline: a worker
run, a subprocess, the bisector are cut there and never judged; minimizing and triaging leave
their drafts the time those need; what a deadline cut is carried on the next night. Planted
fakes that hang or sleep stand in for slow compiles: no test here waits long."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fuzzer.corpus.case import Case
from fuzzer.execute.pool import OutOfTime, RunnerPool
from fuzzer.execute.recipe import Recipe
from fuzzer.report import draft, night, pipeline
from fuzzer.report.night import Context, Night
from fuzzer.report.nightly import run_night
from fuzzer.report.pipeline import finding_for
from fuzzer.report.store import Store
from fuzzer.triage.attribute import run_bisect
from tests import triage_fakes as tf
from tests.conftest import night_settings


def test_a_run_in_flight_at_the_deadline_is_cut_and_never_judged(fake_runner):
    case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    hanging = case.task(recipe=Recipe("tests.fakes:hang"))
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    start = time.monotonic()
    with pytest.raises(OutOfTime, match="in flight"):  # not a timeout verdict: no finding
        pool.until(start + 2).get("cpu").run(hanging)
    assert time.monotonic() - start < 10  # not the runner's own 60 s timeout
    with pytest.raises(OutOfTime, match="before this run"):
        pool.until(time.monotonic() - 1).run(case.task())
    assert pool.until(time.monotonic() + 60).run(case.task()).verdict.kind == "int-flip"


def test_subprocesses_end_by_the_time_they_are_given(fake_runner, tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import time\nprint('started', flush=True)\ntime.sleep(60)\n")
    start = time.monotonic()
    code, output = draft.run_snippet(script, timeout=2)
    assert code is None and "no answer within 2s" in output
    inductor_case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    inductor_case.recipe = Recipe("inductor")
    result = run_bisect(inductor_case, timeout=1)
    assert result["status"] == "timeout"
    assert time.monotonic() - start < 15


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
    from fuzzer.report.nightly import _recheck_error
    from fuzzer.report.recheck import recheck

    reports = tmp_path / "reports"
    settings = night_settings(reports=reports)
    with Store.in_reports(reports) as store:
        case = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
        finding = finding_for(case, None, (1, 1))
        finding.case_path = str(case.save(reports / "case.pt"))
        store.record(finding)
        pool = RunnerPool({"cpu": fake_runner}, warmup=False)
        errors: list[BaseException] = []
        done = recheck(store, pool.until(time.monotonic() - 1), k=1,
                       on_error=lambda sig, err: errors.append(err))
        assert done == [] and [type(e) for e in errors] == [OutOfTime]
        ctx = Context(settings, Night("2030-01-01", 1, 1), tmp_path, store, pool,
                      lambda line: None)
        _recheck_error(ctx, finding.signature, errors[0])
        assert ctx.night.harness_errors == 0  # rechecked another night, not an error
        _recheck_error(ctx, finding.signature, OSError("planted"))
        assert ctx.night.harness_errors == 1


@pytest.fixture
def short_reserves(monkeypatch):
    """Reserves for a night of seconds, not minutes (a planted backend compiles in no time)."""
    monkeypatch.setattr(night, "DRAFT_RESERVE", 2.0)
    monkeypatch.setattr(pipeline, "DRAFT_RESERVE", 2.0)
    monkeypatch.setattr(pipeline, "MIN_CASE_SECONDS", 3.0)


def test_a_night_whose_triage_is_in_flight_at_the_deadline_ends_on_time(fake_runner, tmp_path,
                                                                        short_reserves):
    """The triage's pattern_matcher knob hangs: the night cuts it at its deadline, records
    nothing half-done, keeps the minimized case, and the next night triages and drafts it."""
    reports = tmp_path / "reports"
    backend = "tests.triage_fakes:plant_or_hang"
    raw = tf.planted_case(backend, fake_runner)
    os.utime(raw.save(reports / "corpus" / raw.file_name()), (1_000_000, 1_000_000))
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1,
                              bisect=False, date="2030-03-01", grammar="vision", seconds=30,
                              fuzz_share=0.2, max_findings=1, backend=backend)
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    hang = tf.hang_file()
    hang.touch()
    lines: list[str] = []
    try:
        start = time.monotonic()
        summary = run_night(settings, log=lines.append, pool=pool)
        elapsed = time.monotonic() - start
    finally:
        hang.unlink(missing_ok=True)
    assert elapsed < 30 + 10, "\n".join(lines)
    with Store.in_reports(reports) as store:
        assert store.findings() == []  # a cut triage is no attribution: nothing recorded
    kept = Case.load(reports / "corpus" / pipeline.CHECKPOINTS / raw.file_name())
    assert kept.origin["fixpoint"] is True  # minimized tonight, kept for tomorrow
    text = summary.read_text()
    assert "## Left for the next night: " in text
    assert f"{raw.file_name()}: the night's time ran out" in text, text

    settings.seconds, settings.date = None, "2030-03-02"
    lines.clear()
    run_night(settings, log=lines.append, pool=pool)
    assert any("minimized an earlier night" in line for line in lines), "\n".join(lines)
    with Store.in_reports(reports) as store:
        drafted = [f for f in store.findings() if f.draft_path]
    assert drafted and Path(drafted[0].draft_path).is_file()
    assert not (reports / "corpus" / pipeline.CHECKPOINTS / raw.file_name()).exists()


def test_minimized_and_triaged_tonight_is_drafted_tonight(fake_runner, tmp_path, monkeypatch):
    """More work than the night has time for (each compiled call sleeps): processing stops
    early enough that every cause it recorded is drafted tonight, within the budget."""
    monkeypatch.setattr(night, "DRAFT_RESERVE", 12.0)  # a planted backend's draft: ~6 s
    monkeypatch.setattr(pipeline, "MIN_CASE_SECONDS", 3.0)
    reports = tmp_path / "reports"
    backend = "tests.fakes:slow_erf_quarter"
    for graph, inputs in tf.erf_through_heads():
        case = tf.judged_case(graph, inputs, backend, fake_runner)
        os.utime(case.save(reports / "corpus" / case.file_name()), (1_000_000, 1_000_000))
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1,
                              bisect=False, date="2030-03-03", grammar="vision", seconds=50,
                              fuzz_share=0.1, backend=backend)
    lines: list[str] = []
    start = time.monotonic()
    summary = run_night(settings, log=lines.append, pool=RunnerPool({"cpu": fake_runner},
                                                                    warmup=False))
    assert time.monotonic() - start < 50 + 10
    text = summary.read_text()
    assert "## Left for the next night" in text  # there was more work than time …
    with Store.in_reports(reports) as store:
        findings = store.findings()
    assert findings, "\n".join(lines)  # … yet what was recorded is drafted
    assert all(f.draft_path and Path(f.draft_path).is_file() for f in findings), \
        "\n".join(lines)
    for finding in findings:  # whole drafts: the plain reproducer had the time to run
        assert "It printed here; it shows the divergence" in Path(finding.draft_path).read_text()
    assert "drafts wait for the next night" not in text

"""Fix verification (recheck) on planted bugs whose 'new build' lacks them, the findings command,
and a short real nightly on the CPU: a draft the first night, none again the second."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fuzzer.cli import main
from fuzzer.corpus.case import Case
from fuzzer.execute import memcheck
from fuzzer.execute.pool import RunnerPool
from fuzzer.execute.workers import LocalRunner
from fuzzer.nightly.job import run_night
from fuzzer.nightly.night import NightSettings
from fuzzer.nightly.pipeline import finding_for
from fuzzer.nightly.recheck import recheck
from fuzzer.nightly.summary import _recheck_section
from fuzzer.report.store import Store
from fuzzer.triage import known
from tests import triage_fakes as tf
from tests.conftest import (
    assert_draft_reads_once,
    night_settings,
    python,
    skip_on_this_torch,
)

ROOT = Path(__file__).resolve().parent.parent
BUGGY = {
    "fixed": "tests.triage_fakes:plant_unless_env",
    "still": "tests.fakes:uint8_plus_one",
    "flaky": "tests.triage_fakes:plant_alternating",
    "crashes": "tests.triage_fakes:plant_or_raise",
}


def record(store: Store, case, reports: Path) -> str:
    finding = finding_for(case, None, (1, 1))
    path = case.save(reports / "findings" / finding.signature / "case.pt")
    finding.case_path = str(path)
    store.record(finding)
    return finding.signature


@pytest.fixture(scope="module")
def recorded(fake_runner, tmp_path_factory):
    """Four planted findings, each judged (diverging) by the buggy build, stored."""
    reports = tmp_path_factory.mktemp("reports")
    with Store.in_reports(reports) as store:
        sigs = {name: record(store, tf.planted_case(backend, fake_runner), reports)
                for name, backend in BUGGY.items()}
    assert len(set(sigs.values())) == len(sigs)
    return reports, sigs


def statuses(reports: Path) -> dict[str, tuple]:
    with Store.in_reports(reports) as store:
        return {f.signature: (f.status, f.reliability, f.fixed_in) for f in store.findings()}


def test_recheck_on_the_buggy_build_keeps_them_open(recorded, fake_runner):
    reports, sigs = recorded
    with Store.in_reports(reports) as store:
        results = recheck(store, RunnerPool({"cpu": fake_runner}, warmup=False), k=3)
    got = statuses(reports)
    assert {r.signature for r in results} == set(sigs.values())
    for name in ("fixed", "still", "crashes"):
        assert got[sigs[name]] == ("open", (3, 3), None)
    assert got[sigs["flaky"]][0] == "flaky" and got[sigs["flaky"]][1][0] in (1, 2)


def test_recheck_on_the_fixed_build_marks_fixed(recorded, fake_runner):
    reports, sigs = recorded
    issue = "https://github.com/pytorch/pytorch/issues/4242"
    fixed_build = LocalRunner("cpu", timeout=60, env={tf.FIXED_ENV: "1"}, warmup=False)
    try:
        with Store.in_reports(reports) as store:
            for name in ("fixed", "still"):  # both filed upstream by a person
                assert store.set_upstream(sigs[name], "filed", issue)
            results = {r.signature: r for r in
                       recheck(store, RunnerPool({"cpu": fixed_build}), k=3)}
    finally:
        fixed_build.close()
    got = statuses(reports)
    assert got[sigs["fixed"]] == ("fixed", (0, 3), str(torch.__version__))
    assert got[sigs["still"]] == ("open", (3, 3), None)
    assert got[sigs["flaky"]][0] == "flaky"
    assert got[sigs["crashes"]] == ("open", (3, 3), None)  # unchanged: it now crashes instead
    assert "not clean" in results[sigs["crashes"]].message
    comment = (f"numfuzz: no longer reproduces on torch {torch.__version__} (3/3 clean runs of "
               "the minimized repro); close #4242?")
    assert results[sigs["fixed"]].comment == comment and not results[sigs["still"]].comment
    section = "\n".join(_recheck_section(list(results.values())))
    assert f"| `{sigs['still']}` | {results[sigs['still']].title} | filed {issue} | still " \
           "reproduces (3/3 runs) |" in section, section
    assert "fixed in this torch (0/3 runs reproduce, every run clean)" in section
    assert f"- {issue}: {comment}" in section
    with Store.in_reports(reports) as store:  # a fixed finding is not replayed again
        again = recheck(store, RunnerPool({"cpu": fake_runner}, warmup=False), k=1)
    assert {r.signature for r in again} == set(sigs.values()) - {sigs["fixed"]}


def test_findings_command_lists_the_store_ranked(recorded):
    reports, sigs = recorded
    result = CliRunner().invoke(main, ["findings", "--reports", str(reports), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["findings"]
    assert {r["signature"] for r in rows} == set(sigs.values())
    assert all(r["kind"] == "int-flip" and r["hits"] == 1 for r in rows)


def test_export_writes_an_xfail_test_that_fails_once_the_bug_is_fixed(fake_runner, tmp_path):
    reports = tmp_path / "reports"
    with Store.in_reports(reports) as store:
        sig = record(store, tf.planted_case(BUGGY["fixed"], fake_runner), reports)
    out = tmp_path / "regressions"
    result = CliRunner().invoke(main, ["export", "--pytest", str(out), "--reports", str(reports)])
    assert result.exit_code == 0, result.output
    module = out / f"numfuzz_{sig}" / f"test_numfuzz_{sig}.py"
    command = ["-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)]
    buggy = python(*command, timeout=300)
    assert buggy.returncode == 0 and "1 xfailed" in buggy.stdout, buggy.stdout[-1500:]
    fixed = python(*command, timeout=300, env={tf.FIXED_ENV: "1"})
    assert fixed.returncode == 1 and "XPASS(strict)" in fixed.stdout, fixed.stdout[-1500:]
    with Store.in_reports(reports) as store:  # closed upstream as expected: nothing to wait for
        store.set_upstream(sig, "wontfix", "https://github.com/pytorch/pytorch/issues/1")
    again = CliRunner().invoke(main, ["export", "--pytest", str(tmp_path / "after"),
                                      "--reports", str(reports)])
    assert again.exit_code == 0 and "0 open root causes exported" in again.output, again.output


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path):
    cli = CliRunner()
    missing = cli.invoke(main, ["findings", "--reports", str(tmp_path / "none")])
    no_budget = cli.invoke(main, ["nightly", "--reports", str(tmp_path), "--device", "cpu"])
    bad_knob = cli.invoke(main, ["nightly", "--cases", "1", "--knobs", "nonsense",
                                 "--reports", str(tmp_path), "--device", "cpu"])
    (tmp_path / "junk.pt").write_bytes(b"not a case")
    junk = cli.invoke(main, ["triage", str(tmp_path / "junk.pt")])
    for result in (missing, no_budget, bad_knob, junk):
        assert result.exit_code == 2, result.output
        assert result.output.count("\n") == 1 and "numfuzz: error:" in result.output


# ------------------------------------------------------------------ killed and resumed


def drafts_in(directory: Path) -> list[Path]:
    return sorted(d for d in directory.glob("*/*.md") if not d.name.startswith("SUMMARY"))


def test_night_killed_after_recording_resumes_without_double_counting(fake_runner, tmp_path):
    reports = tmp_path / "reports"
    planted = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner)
    path = planted.save(reports / "corpus" / planted.file_name())
    os.utime(path, (1_000_000, 1_000_000))
    cmd = [sys.executable, "-m", "fuzzer", "nightly", "--device", "cpu", "--cases", "1",
           "--seed", "3", "--reports", str(reports), "--backend", "tests.fakes:uint8_plus_one",
           "--k", "2", "--max-findings", "1", "--no-bisect",
           "--knobs", "emulate_precision_casts"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    victim = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env=env, start_new_session=True)
    seen = []
    for line in victim.stdout:
        seen.append(line)
        if " NEW " in line:  # recorded in the store, draft not written yet
            os.killpg(victim.pid, signal.SIGKILL)
            break
    victim.wait()
    assert victim.returncode == -signal.SIGKILL, seen
    with Store.in_reports(reports) as store:
        assert [f.hits for f in store.findings()] == [1]
    resumed = python(*cmd[1:], timeout=600)  # forked: the same command, torch imported
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming night" in resumed.stdout
    with Store.in_reports(reports) as store:
        (finding,) = store.findings()
        sightings = [r["key"] for night in {r["night"] for r in store.db.execute(
            "SELECT night FROM processed")} for r in store.night_rows(night)
            if r["signature"] == finding.signature]
    # The kill neither lost the planted file's hit nor lets it count twice (the resumed
    # campaign, whose backend plants the bug too, may find it again in a file of its own).
    assert sightings.count(planted.file_name()) == 1
    assert finding.hits == len(sightings)
    assert drafts_in(reports) == [Path(finding.draft_path)]
    summary = Path(finding.draft_path).parent / "SUMMARY.md"
    assert "## New findings: 1" in summary.read_text()


def _seed_corpus(runner, corpus: Path, backend: str, graphs) -> None:
    for graph, inputs in graphs:
        case = tf.judged_case(graph, inputs, backend, runner)
        assert case.verdict.kind == "int-flip", case.verdict.summary()
        os.utime(case.save(corpus / case.file_name()), (1_000_000, 1_000_000))


def erf_night(reports: Path, date: str, runner) -> tuple[NightSettings, RunnerPool, list[str]]:
    """One short night whose own campaign compiles with the planted erf_quarter backend."""
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1, max_calls=60,
                             bisect=False, date=date, grammar="vision", dtypes=("float32",),
                             backend="tests.fakes:erf_quarter")
    pool = RunnerPool({"cpu": runner}, warmup=False)
    lines: list[str] = []
    run_night(settings, log=lines.append, pool=pool)
    return settings, pool, lines


def test_one_planted_cause_through_five_graphs_and_heads_is_one_root_cause(fake_runner,
                                                                          tmp_path, few_knobs):
    """erf a quarter of the truth, reached through five graphs and five heads: one root cause
    with five hits and one draft listing every head it was seen through."""
    reports = tmp_path / "reports"
    _seed_corpus(fake_runner, reports / "corpus", "tests.fakes:erf_quarter",
                 tf.erf_through_heads())
    _, _, lines = erf_night(reports, "2030-01-02", fake_runner)
    with Store.in_reports(reports) as store:
        causes = [f for f in store.findings() if "erf" in f.op_chain]
        assert len(causes) == 1, [(f.signature, f.op_chain) for f in store.findings()]
        (cause,) = causes
        heads = {head for head, _ in store.sightings(cause.signature)}
    assert cause.hits >= 5 and {"e8m0", "quant_int8", "gt_scalar", "quant_uint8",
                                "to_int32"} <= heads, lines
    text = Path(cause.draft_path).read_text()
    assert text.count("| `quant_int8` |") == 1 and "gh search issues" in text
    assert len(drafts_in(reports)) == len(store_findings(reports))  # one draft per cause


def store_findings(reports: Path) -> list:
    with Store.in_reports(reports) as store:
        return store.findings()


def test_two_planted_causes_are_two_and_a_known_cause_is_not_drafted(fake_runner, tmp_path,
                                                                     few_knobs):
    reports = tmp_path / "reports"
    erf_cases = tf.erf_through_heads()[:2]
    _seed_corpus(fake_runner, reports / "corpus", "tests.fakes:erf_quarter", erf_cases)
    planted = tf.planted_case("tests.fakes:uint8_plus_one", fake_runner, scale=3.0)
    os.utime(planted.save(reports / "corpus" / planted.file_name()), (1_000_000, 1_000_000))
    known_file = tmp_path / "known.toml"
    known_file.write_text('[[known]]\nid = "planted-erf"\nwhat = "known: erf quartered"\n'
                          'core_any = ["erf"]\n')
    settings, pool, lines = erf_night(reports, "2030-01-03", fake_runner)
    causes = {f.signature: f for f in store_findings(reports)}
    erf = [f for f in causes.values() if "erf" in f.op_chain]
    other = [f for f in causes.values() if "erf" not in f.op_chain]
    assert len(erf) == 1 and len(other) >= 1, "\n".join(lines)  # two planted causes: two

    again = tmp_path / "again"
    _seed_corpus(fake_runner, again / "corpus", "tests.fakes:erf_quarter", erf_cases)
    settings.reports, settings.date, settings.known_file = again, "2030-01-04", known_file
    run_night(settings, log=lambda line: None, pool=pool)
    with Store.in_reports(again) as store:
        hits = store.known_hits()["planted-erf"]  # the two seeded, and any erf the night found
        assert hits >= 2 and not [f for f in store.findings() if "erf" in f.op_chain]
    summary = (again / "2030-01-04" / "SUMMARY.md").read_text()
    assert f"## Known causes: {hits} hits" in summary and "`planted-erf`" in summary
    assert not [d for d in drafts_in(again) if "erf" in d.read_text().split("\n", 1)[0]]


# ------------------------------------------------------------------ a real night


def seeded_case(runner, values: tuple[float, ...], path: Path) -> Path:
    """The real fp16 round trip -> threshold regression, saved where `numfuzz run` would have put
    it, with an old mtime so the night processes it before anything its short campaign finds."""
    graph, inputs = tf.fp16_roundtrip_gt(values)
    case = tf.judged_case(graph, inputs, "inductor", runner, tf.AS_IS)
    assert case.verdict.kind == "int-flip", case.verdict.summary()
    saved = case.save(path / case.file_name())
    os.utime(saved, (1_000_000, 1_000_000))
    return saved


@pytest.mark.inductor
def test_real_nightly_drafts_once(inductor_runner, tmp_path, few_knobs):
    if tf.inductor_keeps_roundtrip():
        skip_on_this_torch("Inductor rounds the fp16 round trip on the CPU: no regression")
    reports = tmp_path / "reports"
    corpus = reports / "corpus"
    seeded_case(inductor_runner, (0.5002, 0.25, 0.70001, 0.50003), corpus)
    no_known = tmp_path / "no-known.toml"  # drafted here; the packaged file is checked below
    no_known.write_text("")
    # The night's own campaign runs eager: the real Inductor case is the seeded one, minimized,
    # triaged and drafted on the real compiler; a real campaign is test_e2e_inductor's (each of
    # the two nights would otherwise start and warm an Inductor worker of its own, ~20 s).
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=7, k=1,
                             max_findings=1, bisect=False, date="2030-01-01", grammar="vision",
                             dtypes=("float32",), known_file=no_known, backend="eager")
    pool = RunnerPool({"cpu": inductor_runner})
    lines: list[str] = []
    first = run_night(settings, log=lines.append, pool=pool)
    night_dir = reports / "2030-01-01"
    drafts = sorted(night_dir.glob("*.md"))
    drafts = [d for d in drafts if not d.name.startswith("SUMMARY")]
    assert len(drafts) == 1, lines
    text = drafts[0].read_text()
    assert text.startswith("# [inductor][cpu] x.to(torch.float16).to(x.dtype) > 0.50001 of "
                           "0.5 gives True under torch.compile (eager False)\n"), text[:200]
    assert "PyTorch version:" in text  # collect_env
    assert "It printed here; it shows the divergence" in text  # the plain reproducer, run
    assert_draft_reads_once(text)  # its snippet, table, ablation, environment and filing line
    emulated = tf.inductor_keeps_roundtrip(emulate_precision_casts=True)  # what this torch does
    vanishing = text.split("**vanishes with** ", 1)[1].split("\n", 1)[0]
    assert ("`emulate_precision_casts`" in vanishing) == emulated
    summary = first.read_text()
    assert "## New findings: 1" in summary and drafts[0].name in summary
    assert "cases fuzzed" in summary and "| 1 |" in summary
    assert "| strategy | cases | raw findings | worker seconds |" in summary  # where time went

    # Night two: the same bug again, from another raw case (other input values). A hit, no draft.
    seeded_case(inductor_runner, (0.25, 0.50004, 0.9, 0.5003), corpus)
    second = run_night(settings, log=lines.append, pool=pool)
    assert json.loads((night_dir / "night.json").read_text())["run"] == 2
    after = [d for d in night_dir.glob("*.md") if not d.name.startswith("SUMMARY")]
    assert after == drafts, lines
    with Store.in_reports(reports) as store:
        (finding,) = store.findings()
    assert finding.hits == 2 and finding.draft_path == str(drafts[0])
    assert "## New findings: 0" in second.read_text()
    assert "## Recurring: 1" in second.read_text()
    assert (night_dir / "SUMMARY-1.md").read_text() == summary

    # With the packaged known causes it is the expected-by-default round trip exactly when this
    # torch's emulate_precision_casts removes it.
    with Store.in_reports(reports) as store:
        entry = known.match(store.cause(finding.signature))
    assert (entry is not None and entry.id == "fused-low-precision-roundtrip") == emulated



def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (workers run in sessions of their own: killpg misses them)."""
    found, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def test_night_killed_while_fuzzing_resumes_the_whole_night(tmp_path):
    """kill -9 of the driver and both workers in the middle of the campaign, then the same
    command again: the night resumes its campaign, every case file saved before the kill is kept
    and processed once, no cause is drafted twice, and SUMMARY.md counts all 24 cases. (24, so
    that the kill lands mid-campaign even when reading the driver's lines lags behind.)"""
    import re
    import time

    reports = tmp_path / "reports"
    cmd = [sys.executable, "-m", "fuzzer", "nightly", "--device", "cpu", "--cases", "24",
           "--workers", "2", "--seed", "9", "--reports", str(reports),
           "--backend", "tests.fakes:uint8_plus_one", "--k", "1",
           "--max-findings", "2", "--no-bisect"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    victim = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env=env, start_new_session=True)
    found, family = [], []
    deadline = time.monotonic() + 300
    for line in victim.stdout:
        family = sorted(set(family) | set(_descendants(victim.pid)))
        if m := re.search(r"case \d+: .* -> (\S+\.pt)", line):
            found.append(m.group(1))
        if len(found) >= 2 or "fuzzed" in line or time.monotonic() > deadline:
            break
    for pid in [victim.pid, *family]:  # driver and workers, no chance to clean up
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    victim.wait()
    assert len(found) == 2, "the campaign did not save two findings before the deadline"
    (night_file,) = reports.glob("*/night.json")
    night = json.loads(night_file.read_text())
    assert night["stage"] == "fuzz" and 2 <= night["cases"] < 24, night["cases"]
    night_id = f"{night['date']}#{night['run']}"

    resumed = python(*cmd[1:], timeout=600)  # forked: the same command, torch imported
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-2000:]
    assert f"resuming night {night_id} at stage fuzz" in resumed.stdout
    corpus = reports / "corpus"
    assert all((corpus / name).is_file() for name in found)  # nothing saved before is lost
    with Store.in_reports(reports) as store:
        keys = [r["key"] for r in store.night_rows(night_id)]
        findings = store.findings()
    assert len(keys) == len(set(keys))  # each case file processed once
    assert set(found) <= set(keys) | {p.name for p in corpus.glob("*.pt")}
    drafted = [f.signature for f in findings if f.draft_path]
    assert len(drafted) == len(set(drafted)) == len(drafts_in(reports))  # one draft per cause
    summary = (night_file.parent / "SUMMARY.md").read_text()
    assert re.search(r"^\| 24 \| [\d.]+ \| \d+s \|", summary, re.M), summary  # all 24 cases
    assert "**Clean night**" in summary


# ------------------------------------------------------------------ minimal before drafted


def erf_in_a_larger_graph() -> tuple:
    """erf into an E8M0 head behind a tanh, a scale and a side output: minimized, erf -> e8m0."""
    import random

    from fuzzer.gen.grammar import Builder

    b = Builder(random.Random(0), "float32")
    x = b.input((2, 8))
    side = b.op("sigmoid", x)
    head = b.op("e8m0", b.op("erf", b.op("mul_scalar", b.op("tanh", x), value=1.5)), eps=1e-30)
    b.graph.outputs = [head, b.op("gt_scalar", side, value=0.5)]
    return b.graph, {str(x): torch.linspace(0.3, 2.0, 16).reshape(2, 8)}


def test_a_half_shrunk_case_is_carried_to_the_next_night_not_drafted(fake_runner, tmp_path,
                                                                     few_knobs):
    reports = tmp_path / "reports"
    backend = "tests.fakes:erf_quarter"
    graph, inputs = erf_in_a_larger_graph()
    raw = tf.judged_case(graph, inputs, backend, fake_runner)
    os.utime(raw.save(reports / "corpus" / raw.file_name()), (1_000_000, 1_000_000))
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1, max_calls=8,
                              bisect=False, date="2030-02-10", grammar="vision",
                              dtypes=("float32",), backend=backend)
    pool = RunnerPool({"cpu": fake_runner}, warmup=False)
    first = run_night(settings, log=lambda line: None, pool=pool)
    assert store_findings(reports) == [] and drafts_in(reports) == []  # nothing half-shrunk
    carried = Case.load(reports / "corpus" / "minimizing" / raw.file_name())
    assert carried.origin["fixpoint"] is False and len(carried.graph) < len(raw.graph)
    text = first.read_text()
    assert f"{raw.file_name()}: minimizer stopped short of its fixpoint (--max-calls" in text

    settings.max_calls, settings.date = 400, "2030-02-11"
    lines: list[str] = []
    run_night(settings, log=lines.append, pool=pool)
    (finding,) = [f for f in store_findings(reports) if "erf" in f.op_chain]
    kept = Case.load(finding.case_path)
    assert kept.graph.op_names() == ["erf", "e8m0"] and kept.origin["fixpoint"] is True
    assert Path(finding.draft_path).is_file()


def test_triage_and_the_nightly_give_one_bug_one_signature(fake_runner, tmp_path):
    """The same raw case: recorded by a night, and by hand with `numfuzz minimize` then
    `numfuzz triage` on its case.pt: one signature. Triage of the raw case says it is not the
    nightly's."""
    reports = tmp_path / "reports"
    backend = "tests.triage_fakes:plant_unless_emulate"  # a knob removes it: vanishes_with
    graph, inputs = erf_in_a_larger_graph()
    raw = tf.judged_case(graph, inputs, backend, fake_runner)
    raw_path = raw.save(tmp_path / "raw.pt")
    os.utime(raw.save(reports / "corpus" / raw.file_name()), (1_000_000, 1_000_000))
    no_known = tmp_path / "no-known.toml"  # the planted cause vanishes as a known one does
    no_known.write_text("")
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1,
                              bisect=False, date="2030-02-12", grammar="vision",
                              dtypes=("float32",), backend=backend, known_file=no_known)
    run_night(settings, log=lambda line: None, pool=RunnerPool({"cpu": fake_runner},
                                                               warmup=False))
    with Store.in_reports(reports) as store:
        (row,) = [r for r in store.night_rows("2030-02-12#1") if r["key"] == raw.file_name()]
    nightly = row["signature"]
    assert nightly

    cli = CliRunner()
    out = tmp_path / "min"
    done = cli.invoke(main, ["minimize", str(raw_path), "-o", str(out), "--corpus",
                             str(tmp_path / "slips"), "--json"])
    assert done.exit_code == 1, done.output  # reproduces k/k
    triaged = cli.invoke(main, ["triage", str(out / "case.pt"), "--no-bisect", "--json"])
    assert triaged.exit_code == 0, triaged.output
    answer = json.loads(triaged.output)
    assert answer["signature"] == nightly and answer["signature_caveat"] == ""
    with Store.in_reports(reports) as store:
        stored = store.get(nightly).attribution["knobs"]
    outcomes = [(k["knob"], k["outcome"]) for k in answer["attribution"]["knobs"]]
    assert outcomes == [(k["knob"], k["outcome"]) for k in stored]  # the same knobs, alike
    assert ("emulate_precision_casts", "vanishes") in outcomes
    unminimized = json.loads(cli.invoke(main, ["triage", str(raw_path), "--no-bisect",
                                               "--json"]).output)
    assert "not minimized" in unminimized["signature_caveat"]
    subset = json.loads(cli.invoke(main, ["triage", str(out / "case.pt"), "--no-bisect",
                                          "--json", "--knobs", "emulate_precision_casts"]).output)
    assert subset["signature"] is None and "subset" in subset["signature_caveat"]


def test_the_nightly_and_minimize_share_one_minimizer_budget():
    """One home for the call budget: a night minimizes a case as `numfuzz minimize` does."""
    from fuzzer.reduce.minimize import MAX_CALLS

    for command in ("nightly", "minimize"):
        (option,) = [p for p in main.commands[command].params if p.name == "max_calls"]
        assert option.default == MAX_CALLS
    assert NightSettings().max_calls == MAX_CALLS


@pytest.mark.skipif(memcheck.library() is None, reason="needs glibc's malloc checking")
def test_the_draft_of_a_heap_overflow_reads_as_one(tmp_path, few_knobs):
    """A heap overflow planted by a fake backend (one byte past a buffer, every call), through
    a real night with malloc checking on, as a nightly on the CPU runs: the draft says what the
    bug is in its title, its value class first, builds its inputs inline, its plain reproducer
    shows the abort in a fresh process and its reliability is measured. (The real C++ GEMM
    template overflow aborts only on some CPUs and costs minutes of max-autotune compiles:
    ``bench/heap_overflow_night.py`` runs it through a night, RESULTS §30.) Two knobs: each
    run kills its worker, and a new one starts."""
    reports = tmp_path / "reports"
    pool = RunnerPool(timeout=120, base_env=memcheck.environment(), warmup=False)
    lines: list[str] = []
    try:
        planted = tf.planted_case("tests.fakes:one_byte_past_the_end", pool.get("cpu"))
        assert planted.verdict.kind == "memory-unsafe", planted.verdict.summary()
        planted.origin.update({memcheck.ORIGIN_KEY: True, "fixpoint": True})  # one op already
        os.utime(planted.save(reports / "corpus" / planted.file_name()), (1_000_000, 1_000_000))
        settings = night_settings(reports=reports, device="cpu", cases=0, seed=7, k=1,
                                 max_findings=1, bisect=False, date="2030-02-01",
                                 backend="tests.fakes:one_byte_past_the_end")
        settings.campaign.malloc_check = True
        run_night(settings, log=lines.append, pool=pool)
    finally:
        pool.close()
    with Store.in_reports(reports) as store:
        found = [f for f in store.findings() if f.kind == "memory-unsafe"]
    assert len(found) == 1, "\n".join(lines)
    finding = found[0]
    text = Path(finding.draft_path).read_text()
    title = text.splitlines()[0]
    assert title.startswith("# [one_byte_past_the_end][cpu] heap corruption: torch.compile "
                            "of ") and "writes past the end of a buffer" in title, title
    assert text.splitlines()[2].startswith("> **Value class 1 of 5: a silent wrong value or a "
                                           "memory-unsafe write"), text[:400]
    assert finding.value_class == 1
    assert "torch.load(" not in text and "x0 = torch.tensor([0.3, 1.5, -2.0, 7.0])" in text
    assert "it shows the divergence (the process died of SIGABRT)" in text, "\n".join(lines)
    assert "Reproduces 1/1 fresh runs" in text
    assert "**vanishes with** `backend=aot_eager`" in text  # no planted backend, no overflow
    assert memcheck.TUNABLE in text

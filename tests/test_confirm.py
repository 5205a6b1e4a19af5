"""Other torches: a script run under another interpreter (``triage.confirm``), the known list
measured by its repros (``numfuzz known --check``, ``--write``), and the nightly and triage
confirming a cause on other torches before it is drafted (``--confirm-with``).

Another environment is faked by a small shell script standing in for its python: it says it
has some torch version and runs scripts with this suite's own interpreter, with a planted
environment variable that removes a planted bug (a newer build that fixed it) or a bug a newer
build brought in (an older build). One test uses real environments: this interpreter and the one
named by ``NUMFUZZ_CONFIRM_PYTHON`` (skipped without it).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fuzzer.cli import main
from fuzzer.errors import InputError
from fuzzer.execute.pool import RunnerPool
from fuzzer.nightly.job import run_night
from fuzzer.report.store import DB_NAME, Store
from fuzzer.triage import confirm, known
from fuzzer.triage.confirm import ABSENT, CANNOT_RUN, REPRODUCES, Run
from tests import triage_fakes as tf
from tests.conftest import night_settings, skip_on_this_torch

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
REAL = "NUMFUZZ_CONFIRM_PYTHON"  # a second real environment's python, for the real test


def fake_python(folder: Path, name: str, version: str, planted: str = "") -> str:
    """Another environment's python: says it has torch ``version``; runs a script with this
    suite's interpreter under ``planted`` (``VAR=1``: a bug fixed there, or not yet there)."""
    path = folder / name
    path.write_text("#!/bin/sh\n"
                    f'if [ "$1" = "-c" ]; then echo "torch {version}"; exit 0; fi\n'
                    f'{planted} PYTHONPATH="{ROOT}" exec "{sys.executable}" "$@"\n')
    path.chmod(0o755)
    return str(path)


def run(torch_version: str, outcome: str) -> Run:
    return Run(f"/envs/{torch_version}/bin/python", torch_version, outcome, None, "", 1.0)


# ------------------------------------------------------------------ running under a python


def test_an_interpreter_says_its_torch_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    newer = confirm.interpreter(fake_python(tmp_path, "newer", "2.99.0+cpu"))
    assert (newer.torch, newer.release) == ("2.99.0+cpu", "2.99")
    no_torch = tmp_path / "no-torch"
    no_torch.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\n"
                        "exit 1\n")
    no_torch.chmod(0o755)
    for python, says in [(str(tmp_path / "missing"), "no such interpreter"),
                         (str(no_torch), "cannot import torch there")]:
        with pytest.raises(InputError, match=says) as err:
            confirm.interpreter(python)
        assert "\n" not in str(err.value)
    cli = CliRunner()
    case = tf.case_of_verdict(tf.e8m0_graph()).save(tmp_path / "case.pt")
    for args in (["known", "--check", "--confirm-with", str(no_torch)],
                 ["nightly", "--cases", "1", "--device", "cpu", "--reports", str(tmp_path / "r"),
                  "--confirm-with", str(tmp_path / "missing")],
                 ["triage", str(case), "--confirm-with", str(tmp_path / "missing")]):
        result = cli.invoke(main, args)
        assert result.exit_code == 2 and result.output.count("\n") == 1, result.output
        assert "numfuzz: error: --confirm-with" in result.output


def test_a_script_exits_by_the_repro_contract_and_a_raise_is_no_reproduction(tmp_path: Path
                                                                            ) -> None:
    newer = confirm.interpreter(fake_python(tmp_path, "newer", "2.99.0"))
    for name, body, outcome in [
            ("present", "print('bug'); raise SystemExit(1)", REPRODUCES),
            ("absent", "print('fine')", ABSENT),
            ("elsewhere", "raise SystemExit(2)", CANNOT_RUN),
            ("raises", "import torch\ntorch.no_such_function()", CANNOT_RUN)]:
        script = tmp_path / f"{name}.py"
        script.write_text(body + "\n")
        for python in (confirm.this_interpreter(), newer):
            got = confirm.run_under(script, python, timeout=60)
            assert (got.outcome, got.torch) == (outcome, python.torch), (name, got)
    raised = confirm.run_under(tmp_path / "raises.py", newer, timeout=60)
    assert raised.code is None and "AttributeError" in raised.output
    (tmp_path / "hangs.py").write_text("import time\ntime.sleep(60)\n")
    cut = confirm.run_under(tmp_path / "hangs.py", newer, timeout=1)
    assert cut.outcome == CANNOT_RUN and "no answer within 1s" in cut.output


def test_a_cause_is_drafted_only_when_every_named_torch_has_it() -> None:
    here = "2.13.0+cpu"
    assert confirm.decide([run("2.11.0", REPRODUCES), run("2.15.0", REPRODUCES)], here) == \
        confirm.Decision(True, None, "reproduces on every named torch")
    fixed = confirm.decide([run("2.11.0", REPRODUCES), run("2.16.0", ABSENT),
                            run("2.15.0.dev20261001+cpu", ABSENT)], here)
    assert not fixed.drafted and fixed.fixed_in == "2.15.0.dev20261001+cpu"  # the oldest newer
    for runs in ([run("2.11.0", ABSENT), run("2.15.0", REPRODUCES)],  # not there yet on 2.11
                 [run("2.13.0+cu126", ABSENT)],  # the same release is not newer
                 [run("2.15.0", CANNOT_RUN)]):
        held = confirm.decide(runs, here)
        assert not held.drafted and held.fixed_in is None, runs
        assert held.why.startswith("not on every named torch: ") and runs[0].torch in held.why


# ------------------------------------------------------------------ the known list measured


def entry(**fields) -> known.Known:
    return known.Known(id="planted", what="planted", repro="raise SystemExit(1)\n", **fields)


@pytest.mark.parametrize("fields, outcomes, fixed_in, change, note", [
    ({}, {"2.11.0": REPRODUCES, "2.13.0": REPRODUCES, "2.15.0": ABSENT}, "2.15",
     {"status": "fixed", "fixed_in": "2.15"}, "the file says open, but it reproduces on 2.13.0 "
                                              "and not on 2.15.0: fixed in 2.15"),
    # the file's 2.14 lies between the last release reproducing and the first measured clean
    ({"status": "fixed", "fixed_in": "2.14"},
     {"2.11.0": REPRODUCES, "2.13.0+cpu": REPRODUCES, "2.15.0": ABSENT}, "2.15", None, ""),
    ({"status": "fixed", "fixed_in": "2.13"},
     {"2.11.0": REPRODUCES, "2.13.0+cpu": REPRODUCES, "2.15.0": ABSENT}, "2.15",
     {"status": "fixed", "fixed_in": "2.15"}, "reproduces on 2.13.0+cpu and not on 2.15.0"),
    ({"status": "fixed", "fixed_in": "2.14"}, {"2.13.0": REPRODUCES, "2.15.0": REPRODUCES}, None,
     {"status": "open", "fixed_in": None}, "the file says fixed in 2.14, but 2.15.0 still "
                                           "reproduces"),
    ({"status": "fixed", "fixed_in": "2.16"}, {"2.13.0": REPRODUCES, "2.15.0": REPRODUCES}, None,
     None, ""),  # fixed in a release newer than any measured
    ({"status": "wontfix"}, {"2.11.0": ABSENT, "2.13.0": REPRODUCES, "2.15.0": CANNOT_RUN}, None,
     None, ""),  # a torch it cannot run on says nothing
    ({}, {"2.11.0": ABSENT, "2.15.0": ABSENT}, None, None,
     "the file says open, but no measured torch reproduces it"),
    ({"status": "fixed", "fixed_in": "2.10"}, {"2.11.0": ABSENT, "2.15.0": ABSENT}, None, None,
     ""),  # fixed before the oldest torch measured
])
def test_measure_says_when_it_was_fixed_and_where_the_file_disagrees(fields, outcomes, fixed_in,
                                                                    change, note) -> None:
    measured = known.measure(entry(**fields), [run(v, o) for v, o in outcomes.items()])
    assert (measured.fixed_in, measured.change) == (fixed_in, change)
    assert note in measured.note and bool(note) == bool(measured.note), measured.note
    versions = [r.torch for r in measured.runs]
    assert versions == sorted(versions, key=known.version_of)  # oldest first


LIST = '''# a comment that must survive
[[known]]
id = "one"
what = "first"
core_any = ["expm1"]
torch = ">=2.5"
repro = \'\'\'
status = "not a key: inside the repro"
import sys; sys.exit(1)
\'\'\'

[[known]]
id = "two"  # a comment on the id
what = "second"
status = "fixed"
fixed_in = "2.14"
repro = \'\'\'
import sys; sys.exit(1)
\'\'\'
'''


def test_write_back_edits_only_the_status_and_fixed_in_lines(tmp_path: Path) -> None:
    text = known.rewrite_entry(LIST, "one", "fixed", "2.15")
    assert text.splitlines()[:6] + text.splitlines()[8:] == LIST.splitlines()
    assert text.splitlines()[6:8] == ['status = "fixed"', 'fixed_in = "2.15"']
    reopened = known.rewrite_entry(text, "two", "open", None)
    assert 'status = "open"' in reopened and 'fixed_in = "2.14"' not in reopened
    assert reopened.count("\n") == text.count("\n") - 1
    assert 'status = "not a key: inside the repro"' in reopened
    with pytest.raises(InputError, match="no entry 'three'"):
        known.rewrite_entry(LIST, "three", "open", None)
    packaged = known.KNOWN_FILE.read_text()  # every entry of the real list can be edited so
    for e in known.entries():
        edited = known.rewrite_entry(packaged, e.id, "fixed", "9.9")
        path = tmp_path / f"{e.id}.toml"
        path.write_text(edited)
        again = {x.id: x for x in known.entries(path)}
        assert (again[e.id].status, again[e.id].fixed_in) == ("fixed", "9.9")
        assert {i: x for i, x in again.items() if i != e.id} == \
            {x.id: x for x in known.entries() if x.id != e.id}
        assert edited.startswith(packaged[:packaged.index("[[known]]")])  # the header stays


def test_every_packaged_entry_carries_a_repro_of_a_few_lines() -> None:
    for e in known.entries():
        lines = e.repro.strip().splitlines()
        compiles = "torch.export" if e.stage.startswith("export") else "torch.compile"
        assert 4 <= len(lines) <= 20 and compiles in e.repro, e.id
        assert "sys.exit(1" in e.repro and re.search(r"^import .*\btorch\b", e.repro, re.M)
        assert "fuzzer" not in e.repro, e.id  # plain torch, nothing of numfuzz


def test_known_check_prints_per_torch_and_writes_the_measured_fix(tmp_path: Path) -> None:
    path = tmp_path / "known.toml"
    path.write_text('# kept\n[[known]]\nid = "gone-upstream"\nwhat = "a"\ncore_any = ["x"]\n'
                    "repro = '''\nimport os, sys\n"
                    f"sys.exit(0 if os.environ.get('{tf.FIXED_ENV}') == '1' else 1)\n'''\n\n"
                    '[[known]]\nid = "fixed-but-present"\nwhat = "b"\nstatus = "fixed"\n'
                    'fixed_in = "2.0"\nrepro = \'\'\'\nimport sys\nsys.exit(1)\n\'\'\'\n\n'
                    '[[known]]\nid = "cuda-only"\nwhat = "c"\n'
                    "repro = '''\nprint('needs CUDA')\nraise SystemExit(2)\n'''\n")
    newer = fake_python(tmp_path, "newer", "2.99.0", f"{tf.FIXED_ENV}=1")
    args = ["known", "--check", "--known", str(path), "--confirm-with", newer]
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    table = [line for line in shown.output.splitlines() if "│" in line]
    row = {line.split("│")[1].strip(): line for line in table}
    assert "reproduces" in row["gone-upstream"] and "fixed" in row["gone-upstream"].split(
        "│")[4] and "fixed in 2.99" in row["gone-upstream"]
    assert "cannot run" in row["cuda-only"]
    assert path.read_text().count("status") == 1  # no --write: the file is untouched
    result = CliRunner().invoke(main, [*args, "--write", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert {t["torch"] for t in out["torches"]} >= {"2.99.0"}
    by_id = {e["id"]: e for e in out["entries"]}
    assert by_id["gone-upstream"]["change"] == {"status": "fixed", "fixed_in": "2.99"}
    assert "2.0" in by_id["fixed-but-present"]["note"]  # fixed in 2.0, yet it reproduces
    assert by_id["cuda-only"]["note"] == "ran on no torch here"
    assert out["written"] == ["gone-upstream", "fixed-but-present"]
    again = {e.id: e for e in known.entries(path)}
    assert (again["gone-upstream"].status, again["gone-upstream"].fixed_in) == ("fixed", "2.99")
    assert (again["fixed-but-present"].status, again["fixed-but-present"].fixed_in) == \
        ("open", "")
    assert path.read_text().startswith("# kept\n")


# ------------------------------------------------------------------ the store


def test_a_version_2_store_gains_what_confirming_records(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / DB_NAME)  # version 1, as 9a5c8c0 wrote it, then as a
    db.executescript((DATA / "findings_store_v1.sql").read_text())  # version-2 numfuzz left it
    db.executescript("ALTER TABLE findings ADD COLUMN upstream_state TEXT;"
                     "ALTER TABLE findings ADD COLUMN upstream_url TEXT;"
                     "UPDATE meta SET value = '2' WHERE key = 'schema_version';")
    db.close()
    runs = [run("2.11.0", REPRODUCES), run("2.99.0", ABSENT)]
    with Store.in_reports(tmp_path) as store:
        (old,) = store.findings()
        assert old.fixed_upstream is None and store.confirmations(old.signature) == []
        store.record_confirmations(old.signature, runs, fixed_upstream="2.99.0")
    with Store.in_reports(tmp_path) as store:
        got = store.get(old.signature)
        assert got.fixed_upstream == "2.99.0" and got.hits == old.hits
        assert store.confirmations(old.signature) == runs
        assert not got.awaits_draft  # fixed upstream: never drafted
        version = store.db.execute("SELECT value FROM meta").fetchone()[0]
    assert version == "5"


# ------------------------------------------------------------------ triage and the nightly


def test_triage_confirm_with_gives_the_table_per_torch(fake_runner, tmp_path: Path) -> None:
    case = tf.planted_case("tests.triage_fakes:plant_unless_env", fake_runner)
    path = case.save(tmp_path / "case.pt")
    newer = fake_python(tmp_path, "newer", "2.99.0", f"{tf.FIXED_ENV}=1")
    older = fake_python(tmp_path, "older", "1.0.0")
    result = CliRunner().invoke(main, ["triage", str(path), "--knobs", "emulate_precision_casts",
                                       "--k", "1", "--no-bisect", "--confirm-with", older,
                                       "--confirm-with", newer, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [(r["torch"], r["outcome"]) for r in out["confirmations"]] == \
        [("1.0.0", REPRODUCES), ("2.99.0", ABSENT)]
    assert out["confirmed"]["fixed_in"] == "2.99.0" and not out["confirmed"]["drafted"]


def test_a_nightly_with_confirm_with_drafts_only_what_every_named_torch_has(
        fake_runner, tmp_path: Path, few_knobs) -> None:
    """Three planted causes, two other torches: one fixed on the newer (recorded as fixed
    upstream, counted, not drafted), one a newer build brought in that the older lacks (held
    back), one on every torch (drafted, its draft saying so per version)."""
    reports = tmp_path / "reports"
    backends = {"fixed": "tests.triage_fakes:plant_unless_env",
                "new": "tests.triage_fakes:plant_unless_old",
                "everywhere": "tests.fakes:uint8_plus_one"}
    for scale, backend in zip((3.0, 5.0, 7.0), backends.values()):
        case = tf.planted_case(backend, fake_runner, scale=scale)
        os.utime(case.save(reports / "corpus" / case.file_name()), (1_000_000, 1_000_000))
    settings = night_settings(reports=reports, device="cpu", cases=1, seed=1, k=1, max_calls=40,
                              bisect=False, date="2030-02-01", backend="eager")
    settings.confirm_with = confirm.interpreters([
        fake_python(tmp_path, "older", "1.0.0", f"{tf.OLD_ENV}=1"),
        fake_python(tmp_path, "newer", "2.99.0", f"{tf.FIXED_ENV}=1")])
    lines: list[str] = []
    summary = run_night(settings, log=lines.append, pool=RunnerPool({"cpu": fake_runner}))
    with Store.in_reports(reports) as store:
        causes = {name: next(f for f in store.findings()
                             if f.attribution and store.cause(f.signature)["backend"] == b)
                  for name, b in backends.items()}
        confirmations = {name: store.confirmations(f.signature) for name, f in causes.items()}
    assert causes["fixed"].fixed_upstream == "2.99.0" and causes["fixed"].draft_path is None
    assert causes["new"].fixed_upstream is None and causes["new"].draft_path is None
    assert [(r.torch, r.outcome) for r in confirmations["new"]] == \
        [("1.0.0", ABSENT), ("2.99.0", REPRODUCES)]
    drafted = Path(causes["everywhere"].draft_path).read_text()
    assert "Confirmed on:" in drafted and "| 1.0.0 | reproduces |" in drafted
    assert "| 2.99.0 | reproduces |" in drafted, drafted
    assert sorted(p.name for p in summary.parent.glob("*.md")) == \
        sorted(["SUMMARY.md", Path(causes["everywhere"].draft_path).name])
    counts = ("confirmed on torch 1.0.0, 2.99.0: 1 on every one (drafted), 1 fixed upstream on "
              "a newer torch (not drafted), 1 not on every one (not drafted)")
    text = summary.read_text()
    assert counts in lines[-1] and counts in text, lines[-1]
    assert "none: fixed upstream in torch 2.99.0" in text
    assert "no: not on every named torch: does not reproduce on torch 1.0.0" in text
    assert "none tonight: not on every --confirm-with torch" in text


# ------------------------------------------------------------------ real environments


@pytest.mark.inductor
@pytest.mark.skipif(not os.environ.get(REAL), reason=f"{REAL} names no second environment")
def test_a_real_inductor_repro_on_this_torch_and_another_real_one(inductor_runner) -> None:
    """One tiny real graph (x.to(float16).to(float32) > t, where Inductor keeps the round trip
    in float32 by default: compiled further from float64 than eager), its repro.py run by this
    interpreter and by the environment ``NUMFUZZ_CONFIRM_PYTHON`` names."""
    if tf.inductor_keeps_roundtrip():
        skip_on_this_torch("Inductor rounds the fp16 round trip on the CPU: no regression")
    graph, inputs = tf.fp16_roundtrip_gt()
    case = tf.judged_case(graph, inputs, "inductor", inductor_runner, tf.AS_IS)
    assert case.verdict.kind == "int-flip", case.verdict.summary()
    other = confirm.interpreter(os.environ[REAL])
    here = confirm.this_interpreter()
    assert other.torch != here.torch, "name an environment with another torch"
    runs = confirm.confirm_case(case, [here, other], timeout=600)
    assert [r.torch for r in runs] == [here.torch, other.torch]
    assert runs[0].outcome == REPRODUCES, runs[0].output
    assert runs[1].outcome in (REPRODUCES, ABSENT), runs[1].output  # it ran there
    print(f"\n{other.torch}: {runs[1].outcome} ({runs[1].output.splitlines()[0]})")

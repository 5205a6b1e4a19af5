"""A newcomer's first hour (issue 28): every promise of the README kept, every answer consistent.

Each test drives the command line as a user does (click's runner in-process, or a real process
for what needs one: Ctrl-C, torch's own log on stderr, make). Subprocesses run
``python -m fuzzer`` with this checkout first on the path, so they test this tree's code.
Output folders that exist but cannot be written are simulated for root (who ignores directory
permissions) by failing the one place numfuzz writes a file (``corpus.files.atomic_write``'s
temp file), and are real read-only folders otherwise.
"""

from __future__ import annotations

import errno
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fuzzer.cli import main
from fuzzer.corpus import files
from fuzzer.corpus.case import Case
from fuzzer.corpus.ledger import campaigns_in
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.runner import run_task
from fuzzer.gen.grammar import Builder
from fuzzer.report.store import Store
from tests.conftest import python, skip_on_this_torch

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "tests" / "models"
FAKE = "tests.fakes:uint8_plus_one"
FAKE_RUN = ["run", "--device", "cpu", "--dtype", "fp32", "--draws", "1"]


def numfuzz(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return python("-m", "fuzzer", *args, cwd=ROOT, timeout=timeout)


def error_line(stderr: str) -> str:
    """The one line a user error is: no traceback, no log, nothing else on stderr."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("numfuzz: error: "), stderr
    return lines[0]


def invoke(args: list[str]):
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result


def unwritable(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """``folder`` exists and refuses new files: read-only for a normal user; for root, whom
    permissions do not stop, every temp file numfuzz would create there fails as on a
    read-only file system."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return
    real = tempfile.mkstemp

    def refuse(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).resolve().is_relative_to(folder.resolve()):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dir))
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(files.tempfile, "mkstemp", refuse)


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting a worker process (any real work) fails the test."""
    from fuzzer.execute import workers

    def started(*args, **kwargs):
        raise AssertionError("work started before the output folder was checked")

    monkeypatch.setattr(workers.Worker, "__init__", started)


def planted_case(path: Path, backend: str = FAKE, first: float = 1000.0) -> Path:
    """A small real case, judged here: ``quant_uint8(exp(x))`` with ``x[0] = first``; the
    default overflows there (float64's value at the head is inf: its distance from the boundary
    is not a number)."""
    b = Builder(random.Random(0), "float32")
    x = b.input((6,))
    out = b.op("quant_uint8", b.op("exp", x), scale=0.5, zero_point=0)
    b.graph.outputs = [out]
    values = torch.tensor([first, 0.3, 1.7, -2.0, 2.2, 0.9])
    case = Case(graph=b.graph, inputs={str(x): values}, device="cpu", dtype="float32",
                recipe=Recipe(backend=backend), seed=0, grammar="test")
    case.verdict = run_task(case.task()).verdict
    case.save(path)
    return path


# ------------------------------------------------------------------ 1. unwritable output


def test_an_output_folder_that_cannot_be_made_is_one_line_before_any_work(
        tmp_path: Path, no_work: None) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = invoke(["run", "--cases", "2", "--device", "cpu", "--out", str(blocker / "out")])
    assert result.exit_code == 2
    assert "cannot be made" in error_line(result.stderr) and str(blocker) in result.stderr
    assert not (blocker.parent / "out").exists()


@pytest.mark.parametrize("command", ["run", "minimize", "nightly", "export", "recheck"])
def test_an_output_folder_that_exists_but_refuses_files_is_one_line_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_work: None, command: str) -> None:
    case = planted_case(tmp_path / "case.pt", first=0.9)  # a finding: minimize would start
    assert Case.load(case).verdict.is_finding
    reports = tmp_path / "reports"
    with Store.in_reports(reports):
        pass
    ro = reports if command == "recheck" else tmp_path / "ro"
    unwritable(monkeypatch, ro)
    args = {"run": ["run", "--cases", "2", "--device", "cpu", "--out", str(ro)],
            "minimize": ["minimize", str(case), "-o", str(ro / "min")],
            "nightly": ["nightly", "--cases", "2", "--device", "cpu", "--reports", str(ro)],
            "export": ["export", "--pytest", str(ro), "--reports", str(reports)],
            "recheck": ["findings", "--recheck", "--reports", str(reports)]}[command]
    result = invoke(args)
    assert result.exit_code == 2, result.output
    assert "cannot write there" in error_line(result.stderr)


def test_a_folder_without_room_for_a_case_is_one_line(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      no_work: None) -> None:
    real = shutil.disk_usage
    monkeypatch.setattr(files.shutil, "disk_usage",
                        lambda p: real(p)._replace(free=2**20))  # one MiB left
    result = invoke(["run", "--cases", "2", "--device", "cpu", "--out", str(tmp_path / "c")])
    assert result.exit_code == 2
    assert "only 1 MiB free" in error_line(result.stderr)


def test_a_disk_that_fills_mid_run_stops_it_in_one_line_keeping_what_was_saved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first case file goes through; from then on every new file in the corpus fails as on
    a full disk. The campaign stops at once, says so in one line, and the saved file loads."""
    out = tmp_path / "corpus"
    real = tempfile.mkstemp
    full = []

    def filling(*args, dir=None, prefix="", **kwargs):
        inside = dir is not None and Path(dir).resolve() == out.resolve()
        if inside and full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dir))
        made = real(*args, dir=dir, prefix=prefix, **kwargs)
        if inside and prefix.endswith(".pt."):  # a case file: the disk is full after it
            full.append(prefix)
        return made

    monkeypatch.setattr(files.tempfile, "mkstemp", filling)
    result = invoke([*FAKE_RUN, "--cases", "40", "--seed", "9", "--backend", FAKE,
                     "--out", str(out)])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("numfuzz: error: campaign stopped at case ")
    assert "No space left on device" in line and "Traceback" not in result.output
    saved = list(out.glob("*.pt"))
    assert len(full) == len(saved) == 1 and f"the {len(saved)} findings saved are kept" in line
    assert Case.load(saved[0]).verdict.is_finding
    ran = len(re.findall(r" case \d+: ", result.stdout))
    assert ran < 10  # it stopped at once, not after the harness stop rule's ten failures


# ------------------------------------------------------------------ 2. --resume


def _ctrl_c_restored() -> None:
    """In the child, before it starts: SIGINT back to its default. A suite started in the
    background of a script (``cmd &``) runs with SIGINT ignored, every child inherits that, and
    Python then never raises KeyboardInterrupt: Ctrl-C would reach nothing (three fresh-clone
    runs launched so timed out here; bench/RESULTS.md §19)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_resume_refuses_other_flags_by_name_and_campaigns_keep_their_own_ledgers(
        tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    run = [*FAKE_RUN, "--backend", "eager", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "fuzzer", *run, "--seed", "13",
                             "--cases", "100000", "--json"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_ctrl_c_restored)
    seen, logged = 0, []
    while seen < 3:  # a few cases done, then Ctrl-C (under --json the log is on stderr)
        line = proc.stderr.readline()
        logged.append(line)
        assert line, "".join(logged) + proc.stdout.read()
        seen += bool(re.search(r" case \d+: ", line))
    proc.send_signal(signal.SIGINT)
    out_text, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "--resume" in err and "same campaign flags" in err and "--seed 13" in err
    (ledger, key), = campaigns_in(out)
    done = json.loads(ledger.read_text())["below"]
    assert key["seed"] == 13 and done >= 3
    partial = json.loads(out_text)  # --json still reports what ran before the interrupt
    assert partial["stopped"] == "interrupted" and partial["cases"] == done

    refused = numfuzz(*run, "--cases", "5", "--resume")  # --seed forgotten
    assert refused.returncode == 2
    assert "--seed (recorded 13, now 0)" in error_line(refused.stderr)
    assert json.loads(ledger.read_text())["below"] == done  # nothing run, nothing overwritten

    resumed = numfuzz(*run, "--seed", "13", "--cases", str(done + 2), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    indices = [int(i) for i in re.findall(r" case (\d+): ", resumed.stdout)]
    assert indices == [done, done + 1]  # continues where it stopped

    other = numfuzz(*run, "--seed", "14", "--cases", "2")  # a new campaign beside it
    assert other.returncode == 0, other.stderr
    ledgers = dict((key["seed"], json.loads(path.read_text())["below"])
                   for path, key in campaigns_in(out))
    assert ledgers == {13: done + 2, 14: 2}


def test_resume_over_a_garbled_ledger_is_one_line(tmp_path: Path, no_work: None) -> None:
    out = tmp_path / "corpus"
    out.mkdir()
    (out / ".numfuzz-state.json").write_text('{"key": {"seed": 0}, "below": "many"')  # cut
    result = invoke([*FAKE_RUN, "--backend", "eager", "--cases", "2", "--out", str(out),
                     "--resume"])
    assert result.exit_code == 2
    assert "is not a readable ledger" in error_line(result.stderr)


# ------------------------------------------------------------------ 3. one model, one verdict


@pytest.mark.inductor
def test_a_model_file_gets_one_verdict_and_the_exit_code_follows_it() -> None:
    """sign(remainder(a, -0.1)) as int8: eager -1, compiled 0, float64 -1, with float64 millions
    of ulps from the sign's boundary. The file's own verdict is that strong flip, and replay
    says nothing more about the capture, which agrees."""
    proc = numfuzz("replay", str(MODELS / "sign_remainder.py"), "--json")
    report = json.loads(proc.stdout)
    if report["captured_verdict"]["kind"] == "ok":
        skip_on_this_torch("Inductor computes the remainder as eager does")
    own = report["verdict"]
    assert own["kind"] == "int-flip" and report["same"], report
    assert proc.returncode == 1, proc.stderr
    shown = numfuzz("replay", str(MODELS / "sign_remainder.py"))
    assert shown.returncode == 1
    first = shown.stdout.splitlines()[0]
    assert "sign_remainder.py: int-flip (strong evidence)" in first
    assert "weak-flip" not in shown.stdout and "its capture" not in shown.stdout


@pytest.mark.inductor
def test_minimize_of_a_model_that_does_not_diverge_exits_3_in_one_line(tmp_path: Path) -> None:
    proc = numfuzz("minimize", str(MODELS / "buffer_linear.py"), "-o", str(tmp_path / "m"),
                   "--corpus", str(tmp_path / "slips"))
    assert proc.returncode == 3, proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("numfuzz:")]
    assert len(said) == 1 and "does not diverge" in said[0] and "Traceback" not in proc.stderr


# ------------------------------------------------------------------ 4. make run


def test_make_run_is_a_success_with_a_fresh_seed_and_says_what_to_do_next(
        tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("no make here")
    made = (ROOT / "pyproject.toml").stat().st_mtime_ns + 10**9  # newer: make skips setup

    def stand_in(name: str, body: str) -> Path:
        """A venv whose numfuzz is ``body``, newer than pyproject.toml: make skips its setup."""
        script = tmp_path / name / "bin" / "numfuzz"
        script.parent.mkdir(parents=True)
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
        os.utime(script, ns=(made, made))
        return tmp_path / name

    venv = stand_in("venv", f'PYTHONPATH="{ROOT}" exec "{sys.executable}" -m fuzzer "$@"')
    out = tmp_path / "corpus"

    def make_run(*extra: str, bin_dir: Path = venv) -> subprocess.CompletedProcess:
        proc = subprocess.run(["make", "-s", "run", f"VENV={bin_dir}", f"OUT={out}",
                               f"ARGS=--backend {FAKE} --dtype fp32 --draws 1 "
                               "--surface default", *extra],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert "Error" not in proc.stderr
        assert not (bin_dir / "pyvenv.cfg").exists()  # setup skipped: no venv, no pip install
        return proc

    found = make_run("SEED=3", "CASES=1")  # seed 3's first case is a finding
    assert "campaign seed 3 " in found.stdout
    assert "findings: int-flip" in found.stdout  # it found something, and that is success
    tail = found.stdout.strip().splitlines()[-3:]
    assert [ln.split()[3] for ln in tail] == ["replay", "minimize", "triage"], tail
    assert {key["seed"] for _, key in campaigns_in(out)} == {3}  # its own ledger
    # Without SEED: the seed the Makefile draws is the one numfuzz gets. A numfuzz that only
    # says its arguments stands in (the campaign itself is the run above).
    echo = stand_in("echo-venv", 'echo "numfuzz $*"')
    fresh = [make_run("CASES=1", bin_dir=echo) for _ in range(2)]
    seeds = [int(re.search(r"campaign seed (\d+)", p.stdout).group(1)) for p in fresh]
    assert seeds[0] != seeds[1]  # a fresh campaign each time, never the same seed-0 one
    assert all(f"--seed {seed} " in p.stdout for seed, p in zip(seeds, fresh))


# ------------------------------------------------------------------ 5. --backend checked


def test_a_backend_that_cannot_be_imported_is_one_line_before_any_case(
        tmp_path: Path, no_work: None) -> None:
    for backend, why in (("nosuchmodule:fn", "No module named 'nosuchmodule'"),
                         ("tests.fakes:nosuch", "has no attribute 'nosuch'")):
        result = invoke(["run", "--cases", "2", "--device", "cpu", "--backend", backend,
                         "--out", str(tmp_path / "c")])
        assert result.exit_code == 2
        line = error_line(result.stderr)
        assert f"--backend {backend}: cannot import it" in line and why in line


# ------------------------------------------------------------------ 6. a model that raises


def test_a_model_that_raises_in_eager_says_so_and_where() -> None:
    proc = numfuzz("replay", str(MODELS / "invalid" / "raises_in_eager.py"))
    assert proc.returncode == 2
    line = error_line(proc.stderr)  # torch's log of its own tracing would be lines more
    assert "Model itself raises in eager, before any compile" in line
    assert "mat1 and mat2 shapes cannot be multiplied" in line
    assert line.endswith(f"(at {MODELS / 'invalid' / 'raises_in_eager.py'}:12)")


# ------------------------------------------------------------------ 7. verdict tables


def test_the_verdict_table_names_values_as_repro_does_and_marks_each_element(
        tmp_path: Path) -> None:
    """Element 0 is perturbed: float64 far from the quantizer's boundary there (strong
    evidence), and then, in a second case, overflowing to inf (no distance: repro.py's nan)."""
    for first, exit_code, label, distance in ((0.9, 1, "strong evidence", "e+"),
                                              (1000.0, 0, "regress, weak", "nan")):
        case = planted_case(tmp_path / f"case-{first}.pt", first=first)
        proc = numfuzz("--trust-backend", FAKE, "replay", str(case))
        assert proc.returncode == exit_code, proc.stdout + proc.stderr
        table = proc.stdout
        graph = Case.load(case).graph
        name = graph.var(graph.outputs[0])
        assert re.search(rf"│ 0 +│ {name} +│ uint8", table)  # repro.py's name, not a node id
        assert f"{name} (output 0): differing elements" in table
        row = next(ln for ln in table.splitlines() if ln.startswith("│ (0,)"))
        assert label in row and distance in row, row
        assert "None" not in table
        assert not re.search(r"(\S+)\.\.\1 ulps", table)  # no range from a value to itself
        assert "benign: compiled at least as close" in table  # the legend


# ------------------------------------------------------------------ 8. papercuts


def test_help_loads_no_torch() -> None:
    """``--help`` of every command without importing torch (bench/startup.py times it)."""
    code = ("import sys\nfrom fuzzer.cli import main\n"
            "for args in ([], ['run'], ['replay'], ['corpus', 'list'], ['minimize'], ['repro'],"
            " ['triage'], ['nightly'], ['findings'], ['export'], ['known']):\n"
            "    try:\n        main([*args, '--help'])\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('torch', 'numpy', 'networkx') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_gpus_on_the_cpu_is_refused(tmp_path: Path, no_work: None) -> None:
    result = invoke(["run", "--device", "cpu", "--gpus", "0", "--out", str(tmp_path / "c")])
    assert result.exit_code == 2 and "--gpus 0: this run is on the CPU" in result.stderr


def test_random_bytes_are_not_a_case_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pt"
    junk.write_bytes(random.Random(1).randbytes(512))
    result = invoke(["replay", str(junk)])
    assert result.exit_code == 2
    assert error_line(result.stderr).endswith("not a numfuzz case file (not a torch.save archive)")


def test_triage_documents_its_exit_codes() -> None:
    text = invoke(["triage", "--help"]).output
    assert "Exit 0:" in text and "3:" in text and "2: bad input" in text


# ------------------------------------------------------------------ no traceback, anywhere


COMMANDS = ["run", "replay", "corpus list", "minimize", "repro", "triage", "nightly",
            "findings", "export", "known"]


def walk_args(command: str, trouble: str, tmp: Path) -> list[str] | None:
    """The command line of ``command`` meeting ``trouble`` (None: the command has no such
    input). ``tmp`` holds ``case.pt`` (a real case), ``junk.*`` (malformed files), ``file``
    (a file where a folder must be made) and ``reports`` (a findings store)."""
    missing, junk, blocked = tmp / "missing", tmp / "junk", tmp / "file" / "sub"
    case, reports = str(tmp / "case.pt"), str(tmp / "reports")
    table = {
        "run": {"missing": ["--seed-model", f"{missing}.py"],
                "malformed": ["--seed-model", f"{junk}.py"],
                "unwritable": ["--out", str(blocked)]},
        "replay": {"missing": [f"{missing}.pt"], "malformed": [f"{junk}.pt"]},
        "corpus list": {"missing": [str(missing)], "malformed": [str(tmp)]},
        "minimize": {"missing": [f"{missing}.pt"], "malformed": [f"{junk}.pt"],
                     "unwritable": [case, "-o", str(blocked)]},
        "repro": {"missing": [f"{missing}.pt", "-o", str(tmp / "r")],
                  "malformed": [f"{junk}.pt", "-o", str(tmp / "r")],
                  "unwritable": [case, "-o", str(blocked)]},
        "triage": {"missing": [f"{missing}.pt"], "malformed": [f"{junk}.pt"]},
        "nightly": {"missing": ["--cases", "1", "--known", f"{missing}.toml"],
                    "malformed": ["--cases", "1", "--known", f"{junk}.toml"],
                    "unwritable": ["--cases", "1", "--reports", str(blocked)]},
        "findings": {"missing": ["--reports", str(missing)],
                     "malformed": ["--reports", str(tmp / "junk-reports")]},
        "export": {"missing": ["--pytest", str(tmp / "x"), "--reports", str(missing)],
                   "malformed": ["--pytest", str(tmp / "x"), "--reports",
                                 str(tmp / "junk-reports")],
                   "unwritable": ["--pytest", str(blocked), "--reports", reports]},
        "known": {"missing": ["--check", "--known", f"{missing}.toml"],
                  "malformed": ["--check", "--known", f"{junk}.toml"]},
    }
    extra = table[command].get(trouble)
    return None if extra is None else [*command.split(), *extra]


@pytest.fixture(scope="module")
def troubles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("walk")
    planted_case(tmp / "case.pt", backend="eager")
    (tmp / "junk.pt").write_bytes(b"\x00\x01garbage" * 50)
    (tmp / "junk.py").write_text("class Model(:\n")
    (tmp / "junk.toml").write_text("[[known]\nthis is = not toml")
    (tmp / "junk-reports").mkdir()
    (tmp / "junk-reports" / "findings.sqlite").write_bytes(b"not a database" * 100)
    (tmp / "file").write_text("a file where a folder must be made")
    with Store.in_reports(tmp / "reports"):
        pass
    return tmp


@pytest.mark.parametrize("trouble", ["missing", "malformed", "unwritable"])
@pytest.mark.parametrize("command", COMMANDS)
def test_no_command_shows_a_traceback_on_bad_input(troubles: Path, command: str, trouble: str,
                                                   no_work: None) -> None:
    args = walk_args(command, trouble, troubles)
    if args is None:
        pytest.skip(f"{command} takes no {trouble} input of that kind")
    result = invoke(args)
    if command == "corpus list" and trouble == "malformed":  # a listing: the bad file is a row
        assert result.exit_code == 0 and "unreadable" in result.output
        return
    assert result.exit_code == 2, result.output
    error_line(result.stderr)  # click's own usage errors (a path that must exist) too


def test_a_case_numfuzz_cannot_render_keeps_what_was_saved_in_one_line(
        troubles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A case whose repro.py numfuzz fails to render (its own bug: a GPU case with dtype views
    raised in the float64 run repro.py makes, RESULTS §4) is one line, exit 2, from ``repro``;
    after ``minimize`` the minimized case.pt and minimize.log are saved and the line says so."""
    from types import SimpleNamespace

    from fuzzer.cli.cases import _save_minimized
    from fuzzer.reduce import repro

    def broken(case, out_dir):
        raise RuntimeError("self.stride(-1) must be 1 to view Double as Short")

    monkeypatch.setattr(repro, "repro_source", broken)
    result = invoke(["repro", str(troubles / "case.pt"), "-o", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "could not render repro.py" in error_line(result.stderr)
    out = tmp_path / "min"
    out.mkdir()
    saved = _save_minimized(SimpleNamespace(case=Case.load(troubles / "case.pt")), out, ["a"])
    assert saved is None and (out / "case.pt").exists()
    assert "could not render repro.py" in (out / "minimize.log").read_text()

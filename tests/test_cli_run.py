"""`numfuzz run` / `replay` / `corpus list` as a user (or cron) runs them: real processes, fake
compiled backends, exit codes 0/1/2, plain log lines when stdout is not a TTY, --json."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fuzzer.campaign import arms
from fuzzer.campaign.settings import make_case
from fuzzer.cli import UserError, main, parse_duration
from fuzzer.corpus.case import Case
from fuzzer.execute.surface import CATALOGUE
from tests.conftest import campaign_settings, python

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).parent / "numfuzz"
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d (numfuzz run: |case \d+: )")
ANSI = "\x1b["


def numfuzz(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    command = [str(SCRIPT)] if SCRIPT.exists() else ["-m", "fuzzer"]
    return python(*command, *args, cwd=ROOT, timeout=timeout)  # this checkout's fuzzer


# The default surface alone: these tests are about the command, not the plan of arms.
FAKE_RUN = ["run", "--device", "cpu", "--cases", "4", "--seed", "9", "--dtype", "fp32",
            "--draws", "1", "--surface", "default"]


def uint8_cases() -> set[int]:
    """Which of the four cases have a uint8 output (what uint8_plus_one perturbs)."""
    settings = campaign_settings(out=Path("unused"), seed=9, dtypes=("float32",), draws=1)
    settings.plan = arms.plan([CATALOGUE["default"]], settings.weights())  # as FAKE_RUN's
    return {i for i in range(4)
            if any(g.node(o).dtype == "uint8" for g in [make_case(settings, i)[0].graph]
                   for o in g.outputs)}


@pytest.fixture(scope="module")
def planted_corpus(
        tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("cli") / "corpus"
    proc = numfuzz(*FAKE_RUN, "--backend", "tests.fakes:uint8_plus_one", "--out", str(out))
    return out, proc


def test_run_with_findings_exits_1_and_logs_plain_lines(planted_corpus) -> None:
    out, proc = planted_corpus
    assert proc.returncode == 1, proc.stderr
    assert ANSI not in proc.stdout  # not a TTY: no progress bar, no colour codes
    log = [ln for ln in proc.stdout.splitlines() if LOG_LINE.match(ln)]
    assert log[0].split(" ", 1)[1].startswith("numfuzz run: device=cpu grammar=mixed")
    cases = [ln for ln in log if " case " in ln]
    assert len(cases) == 4  # one line per case, as it finishes
    findings = [ln for ln in cases if "int-flip" in ln]
    flagged = {int(re.search(r"case (\d+):", ln).group(1)) for ln in findings}
    assert flagged == uint8_cases()  # exactly the cases with a uint8 output
    assert len(flagged) < 4  # ... which is not all of them
    for line in findings:
        path = Path(line.rsplit("-> ", 1)[1])
        assert path.parent == out and Case.load(path).verdict.kind == "int-flip"
    assert "findings: int-flip" in proc.stdout  # the closing summary table
    assert "Traceback" not in proc.stderr


def test_corpus_list_json(planted_corpus) -> None:
    out, _ = planted_corpus
    proc = numfuzz("corpus", "list", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == len(uint8_cases())
    for row in rows:
        assert row["kind"] == "int-flip" and row["dtype"] == "float32" and row["device"] == "cpu"
        assert row["ops"] > 0 and (out / row["file"]).is_file()


def test_replay_json_of_a_planted_finding_reproduces(planted_corpus) -> None:
    out, _ = planted_corpus
    case = sorted(out.glob("*.pt"))[0]
    proc = numfuzz("replay", str(case), "--json")
    assert proc.returncode == 1, proc.stderr  # the divergence reproduces
    report = json.loads(proc.stdout)
    assert report["case"] == str(case)
    assert report["surface"]["path"] == "compile"  # which path judged it: torch.compile
    assert report["verdict"]["kind"] == "int-flip"
    assert report["verdict"]["outputs"][report["verdict"]["output"]]["dtype"] == "uint8"


def test_run_without_findings_exits_0_and_prints_json(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    proc = numfuzz(*FAKE_RUN, "--backend", "eager", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # stdout holds the JSON and nothing else
    assert summary["cases"] == 4 and summary["findings"] == {} and summary["corpus"] == []
    assert summary["cases_per_min"] > 0
    # The log lines moved to stderr, still one per case.
    assert len([ln for ln in proc.stderr.splitlines() if re.search(r" case \d+: ok$", ln)]) == 4
    assert list(out.glob("*.pt")) == []


def test_bad_duration_exits_2_with_one_line() -> None:
    proc = numfuzz("run", "--time", "5x", "--out", "/nonexistent/never-created")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == ["numfuzz: error: cannot read duration '5x': use e.g. 90s, 30m, 8h or 1h30m"]
    assert not Path("/nonexistent/never-created").exists()


@pytest.mark.parametrize("args,needle", [
    (["replay", "/no/such/case.pt"], "no such file"),
    (["corpus", "list", "/no/such/dir"], "no such corpus directory"),
    (["run", "--time", ""], "cannot read duration"),
    (["run", "--time", "h"], "cannot read duration"),
])
def test_bad_input_exits_2(args: list[str], needle: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("numfuzz: error: ") and needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [
    ["run", "--cases", "0"],
    ["run", "--grammar", "nonsense"],
    ["run", "--dtype", "fp8"],
    ["run", "--no-such-option"],
])
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_cuda_without_a_gpu_exits_2() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    result = CliRunner().invoke(main, ["run", "--device", "cuda", "--cases", "1"])
    assert result.exit_code == 2 and "no CUDA device" in result.stderr


@pytest.mark.parametrize("text,seconds", [
    ("90s", 90), ("90", 90), ("30m", 1800), ("8h", 28800), ("1h30m", 5400), ("0.5h", 1800),
    (None, None),
])
def test_parse_duration(text: str | None, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["5x", "", " ", "m", "1d", "-5s", "1h-30m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(UserError):
        parse_duration(text)


def test_repro_writes_the_saved_case_as_is_and_it_reproduces(planted_corpus,
                                                             tmp_path: Path) -> None:
    from tests.conftest import run_repro

    out, _ = planted_corpus
    case_path = sorted(out.glob("*.pt"))[0]
    proc = numfuzz("repro", str(case_path), "-o", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    repro = tmp_path / "r" / "repro.py"
    source = repro.read_text()
    from fuzzer.ir import render

    assert render.render_function(Case.load(case_path).graph) in source  # not minimized
    done = run_repro(repro)
    assert done.returncode == 1, done.stdout + done.stderr  # the saved divergence reproduces


@pytest.mark.parametrize("make", ["missing", "not-a-case", "out-is-a-file"])
def test_repro_bad_input_is_one_line_and_exit_2(planted_corpus, tmp_path: Path,
                                                make: str) -> None:
    out, _ = planted_corpus
    target, dest = sorted(out.glob("*.pt"))[0], tmp_path / "r"
    if make == "missing":
        target = tmp_path / "nope.pt"
    elif make == "not-a-case":
        target = tmp_path / "junk.pt"
        target.write_bytes(b"not a torch file")
    else:
        dest.write_text("a file")
    proc = numfuzz("repro", str(target), "-o", str(dest))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr

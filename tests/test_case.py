"""Case files: round trip, rejection of bad or hostile files, and crash-safe campaigns (SIGKILL)."""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from fuzzer.campaign.settings import make_case
from fuzzer.cli import main
from fuzzer.corpus.case import FORMAT, VERSION, Case, CaseError
from fuzzer.judge.oracle import Head, judge
from fuzzer.judge.verdict import Verdict
from tests.conftest import campaign_settings, ledger_of, python

ROOT = Path(__file__).resolve().parents[1]


def sample_case() -> Case:
    settings = campaign_settings(out=Path("unused"), seed=2, dtypes=("bfloat16",), draws=2,
                                 backend="tests.fakes:uint8_plus_one")
    case, task = make_case(settings, 1)
    case.inputs = task.draws[1]
    e = torch.tensor([1, 2, 3], dtype=torch.uint8)
    far = Head(torch.zeros(3).double(), torch.ones(3).double(), torch.zeros(3).double(),
               torch.ones(3, dtype=torch.bool))
    case.verdict = judge([e], [e + 1], [e], [far], [case.graph.outputs[0]])
    case.verdict.draw, case.verdict.magnitude = 1, task.magnitudes[1]
    return case


@pytest.fixture(scope="module")
def good_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_case().save(tmp_path_factory.mktemp("case") / "good.pt")


def test_round_trip(good_file: Path) -> None:
    case = sample_case()
    back = Case.load(good_file)
    assert back.graph.to_dict() == case.graph.to_dict()
    assert back.inputs.keys() == case.inputs.keys()
    for key, tensor in case.inputs.items():
        assert back.inputs[key].dtype == tensor.dtype
        assert torch.equal(back.inputs[key], tensor)  # bit for bit, bfloat16 included
    assert back.verdict == case.verdict
    assert (back.device, back.dtype, back.recipe.backend, back.seed, back.grammar) == \
        (case.device, case.dtype, case.recipe.backend, case.seed, case.grammar)
    assert back.origin == case.origin and back.versions["torch"] == str(torch.__version__)
    assert back.digest() == case.digest()
    assert case.file_name() == f"int-flip-{case.digest()[:12]}.pt"


def test_save_is_atomic_and_overwrites(tmp_path: Path) -> None:
    case = sample_case()
    path = case.save(tmp_path / "deep" / "dir" / "c.pt")
    case.seed = 12345
    case.save(path)
    assert Case.load(path).seed == 12345
    assert [p.name for p in path.parent.iterdir()] == ["c.pt"]  # no temp files left behind


def test_the_digest_depends_on_the_inputs() -> None:
    case = sample_case()
    other = sample_case()
    key = next(iter(other.inputs))
    other.inputs[key] = other.inputs[key].clone()
    other.inputs[key].view(-1)[0] += 1
    assert other.digest() != case.digest()


# ---------------------------------------------------------------- files that must be refused


def _save_raw(path: Path, obj: object) -> Path:
    torch.save(obj, path)
    return path


def _edited(**changes: object) -> dict:
    data = sample_case().to_dict()
    data.update(changes)
    return data


def _verdict_with(**details: object) -> dict:
    """The sample's verdict with fields of its diverging output's details replaced: values a
    summary, a table or a draft would format (a property test found ``min_ulps`` as text)."""
    verdict = sample_case().verdict.to_dict()
    verdict["outputs"][0]["details"].update(details)
    return verdict


# Details fields holding what the judge never writes there, and the field the one line names.
MALFORMED_DETAILS = {
    "verdict-count-text": ({"count": "3"}, "count"),
    "verdict-count-flag": ({"count": True}, "count"),
    "verdict-state-of-float": ({"state_of": 1.5}, "state_of"),
    "verdict-gradient-of-text": ({"gradient_of": "0"}, "gradient_of"),
    "verdict-judged-by-number": ({"judged_by": 3}, "judged_by"),
    "verdict-evidence-list": ({"evidence": ["strong"]}, "evidence"),
    "verdict-agrees-text": ({"fp64_agrees": {"eager": "1", "compiled": 0}}, "fp64_agrees"),
    "verdict-agrees-list": ({"fp64_agrees": [1, 0, 0]}, "fp64_agrees"),
    "verdict-elements-dict": ({"elements": {"index": [0]}}, "elements"),
    "verdict-element-not-dict": ({"elements": [[0, 1]]}, "elements"),
    "verdict-element-flag-text": ({"elements": [{"index": [0], "regresses": "yes"}]},
                                  "regresses"),
    "verdict-element-ulps-text": ({"elements": [{"index": [0], "ulps": "1"}]}, "ulps"),
    "verdict-element-value-tensor": ({"elements": [{"index": [0], "eager": torch.ones(2)}]},
                                     "eager"),
    "verdict-element-picked-float": ({"elements": [{"index": [0], "fp64_index": 2.0}]},
                                     "fp64_index"),
}


def make_bad_files(directory: Path, good: Path) -> dict[str, Path]:
    blob = good.read_bytes()
    files = {}

    def put(name: str, data: bytes) -> None:
        files[name] = directory / f"{name}.pt"
        files[name].write_bytes(data)

    put("empty", b"")
    put("truncated", blob[: len(blob) // 2])
    put("truncated-tail", blob[:-30])
    put("garbage", os.urandom(4096))
    put("text", b"import os\nos.system('echo hi')\n")
    put("zeroed-middle", blob[: len(blob) // 3] + bytes(len(blob) // 3) + blob[2 * len(blob) // 3:])
    # A valid zip whose pickle is cut short.
    with zipfile.ZipFile(good) as zf:
        names = zf.namelist()
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as out:
            for name in names:
                data = zf.read(name)
                out.writestr(name, data[: len(data) // 2] if name.endswith("data.pkl") else data)
    put("cut-pickle", buf.getvalue())
    for name, obj in {
        "wrong-version": _edited(version=VERSION + 1),
        "no-version": {k: v for k, v in _edited().items() if k != "version"},
        "wrong-format": _edited(format="someone-else"),
        "plain-tensor": torch.ones(3),
        "list": [FORMAT, VERSION],
        "bad-graph": _edited(graph={"ir_version": 1, "nodes": [], "outputs": [0]}),
        "bad-verdict": _edited(verdict="bogus"),
        "verdict-ulps-text": _edited(verdict=_verdict_with(min_ulps="numfuzz_canary:go")),
        "verdict-element-index": _edited(verdict=_verdict_with(elements=[{"index": "0"}])),
        **{name: _edited(verdict=_verdict_with(**fields)) for name, (fields, _) in
           MALFORMED_DETAILS.items()},
        "missing-input": _edited(inputs={}),
        "input-wrong-shape": _edited(inputs={k: v[..., :1] for k, v in
                                             sample_case().inputs.items()}),
        "input-not-tensor": _edited(inputs={k: 1.0 for k in sample_case().inputs}),
        "no-device": {k: v for k, v in _edited().items() if k != "device"},
    }.items():
        files[name] = _save_raw(directory / f"{name}.pt", obj)
    return files


BAD = ["empty", "truncated", "truncated-tail", "garbage", "text", "zeroed-middle", "cut-pickle",
       "wrong-version", "no-version", "wrong-format", "plain-tensor", "list", "bad-graph",
       "bad-verdict", "verdict-ulps-text", "verdict-element-index", "missing-input",
       "input-wrong-shape", "input-not-tensor", "no-device", *MALFORMED_DETAILS]


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory, good_file: Path) -> dict[str, Path]:
    files = make_bad_files(tmp_path_factory.mktemp("bad"), good_file)
    assert sorted(files) == sorted(BAD)
    return files


@pytest.mark.parametrize("name", BAD)
def test_bad_files_raise_case_error(bad_files: dict[str, Path], name: str) -> None:
    with pytest.raises(CaseError) as info:
        Case.load(bad_files[name])
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(bad_files[name]))


@pytest.mark.parametrize("name", ["verdict-ulps-text", "verdict-element-index",
                                  *MALFORMED_DETAILS])
def test_a_malformed_details_field_is_refused_in_one_line_naming_it(
        bad_files: dict[str, Path], name: str) -> None:
    with pytest.raises(CaseError) as info:
        Case.load(bad_files[name])
    message = str(info.value)
    field = MALFORMED_DETAILS[name][1] if name in MALFORMED_DETAILS else \
        {"verdict-ulps-text": "min_ulps", "verdict-element-index": "index"}[name]
    assert "\n" not in message and "malformed verdict details" in message, message
    assert field in message, message


def test_details_keys_this_numfuzz_does_not_know_are_dropped(tmp_path: Path) -> None:
    """A newer file's details field loads (it is data, not an error) and is not carried on:
    nothing reads it, and unchecked values never reach a re-saved case or --json."""
    path = _save_raw(tmp_path / "newer.pt", _edited(verdict=_verdict_with(
        margin_ulps=[1, "x"], elements=[{"index": [0], "eager": 1, "compiled": 2, "fp64": 1,
                                         "future": {"a": 1}}])))
    case = Case.load(path)
    plain = case.verdict.outputs[0].details.to_dict()  # what a re-saved case would hold
    assert "margin_ulps" not in plain and plain["elements"] == [
        {"index": [0], "eager": 1, "compiled": 2, "fp64": 1}]
    assert case.verdict.summary().startswith("int-flip")


@pytest.mark.parametrize("path", sorted((ROOT / "tests" / "data").glob("*.pt")),
                         ids=lambda p: p.stem)
def test_older_case_files_load_and_write_back_the_details_they_hold(path: Path) -> None:
    """Case files saved before details had a type (tests/data) load, summarize, and their
    verdicts' details come back as the very plain data the file holds: the format is unchanged."""
    case = Case.load(path)
    stored = torch.load(path, weights_only=True)["verdict"]
    if stored is None:
        assert case.verdict is None
        return
    assert case.verdict.to_dict()["outputs"] == stored["outputs"]
    assert case.verdict.summary()


def test_a_verdict_survives_plain_data_unchanged() -> None:
    """What a worker pipe or Ray actor carries: to_dict is plain data, from_dict rebuilds the same
    typed verdict, and its details are read by attribute."""
    verdict = sample_case().verdict
    data = verdict.to_dict()
    assert json.loads(json.dumps(data)) == data  # plain data only
    back = Verdict.from_dict(data)
    assert back == verdict and back.to_dict() == data
    details = back.diverging.details
    assert (details.count, details.total, details.evidence) == (3, 3, "strong")
    assert details.fp64_agrees.compiled == 0 and details.elements[0].distance.ulps == 1.0


def test_missing_file_is_a_case_error(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="no such case file"):
        Case.load(tmp_path / "nope.pt")


class Exploit:
    """Unpickling this runs a shell command that creates ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def hostile_files(directory: Path) -> tuple[dict[str, Path], Path]:
    marker = directory / "PWNED"
    files = {
        "torch-save": directory / "exploit-zip.pt",
        "raw-pickle": directory / "exploit-pickle.pt",
        "inside-case": directory / "exploit-in-case.pt",
    }
    torch.save({"format": FORMAT, "version": VERSION, "payload": Exploit(marker)},
               files["torch-save"])
    files["raw-pickle"].write_bytes(pickle.dumps(Exploit(marker), protocol=2))
    data = sample_case().to_dict()
    data["origin"] = {"note": Exploit(marker)}
    torch.save(data, files["inside-case"])
    return files, marker


def test_the_exploit_is_live(tmp_path: Path) -> None:
    """Guard against a vacuous rejection test: unpickled unsafely, the payload does run."""
    files, marker = hostile_files(tmp_path)
    torch.load(files["torch-save"], weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("kind", ["torch-save", "raw-pickle", "inside-case"])
def test_hostile_pickles_are_refused_without_running(tmp_path: Path, kind: str) -> None:
    files, marker = hostile_files(tmp_path)
    with pytest.raises(CaseError) as info:
        Case.load(files[kind])
    assert "\n" not in str(info.value)
    assert not marker.exists()


# ---------------------------------------------------------------- the CLI on bad files


@pytest.mark.parametrize("name", ["truncated", "garbage", "wrong-version", "wrong-format",
                                  "bad-verdict", "cut-pickle"])
def test_replay_of_a_bad_file_exits_2_with_one_line(bad_files: dict[str, Path],
                                                    name: str) -> None:
    result = CliRunner().invoke(main, ["replay", str(bad_files[name])])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("numfuzz: error: ")
    assert str(bad_files[name]) in lines[0]
    assert result.stdout == ""


def test_replay_of_a_hostile_file_via_the_real_command(tmp_path: Path) -> None:
    files, marker = hostile_files(tmp_path)
    proc = python("-m", "fuzzer", "replay", files["torch-save"], cwd=ROOT, timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("numfuzz: error: "), proc.stderr
    assert "refused" in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not marker.exists()


def test_corpus_list_survives_bad_files(bad_files: dict[str, Path], good_file: Path,
                                        tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("truncated", "wrong-version"):
        (corpus / f"{name}.pt").write_bytes(bad_files[name].read_bytes())
    (corpus / "good.pt").write_bytes(good_file.read_bytes())
    result = CliRunner().invoke(main, ["corpus", "list", str(corpus), "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["file"]: r for r in json.loads(result.stdout)}
    assert rows["good.pt"]["kind"] == "int-flip"
    assert rows["truncated.pt"]["kind"] == rows["wrong-version.pt"]["kind"] == "unreadable"


# ---------------------------------------------------------------- SIGKILL and --resume

RUN = [sys.executable, "-m", "fuzzer", "run", "--device", "cpu", "--backend",
       "tests.fakes:uint8_plus_one", "--cases", "12", "--seed", "46", "--dtype", "fp32",
       "--draws", "1"]
FOUND = re.compile(r"case (\d+): (\S+) .* -> (\S+\.pt)")
DONE = re.compile(r"case (\d+): ")


def _uint8_indices(cases: int) -> set[int]:
    """Cases the planted +1 turns into findings: a uint8 output whose first element is defined
    (not converted from a float64 NaN, which the oracle rightly does not compare)."""
    from fuzzer.execute.runner import Programs
    from fuzzer.judge import rules, semantics

    settings = campaign_settings(out=Path("unused"), seed=46, dtypes=("float32",), draws=1)
    found = set()
    for i in range(cases):
        case, task = make_case(settings, i)
        graph = case.graph
        programs = Programs.build(graph)
        values = rules.float64_run(programs.trace,
                                   [task.draws[0][str(n)] for n in graph.input_ids()])
        undefined = semantics.undefined_elements(graph, values)
        first_uint8 = next((k for k, o in enumerate(graph.outputs)
                            if graph.node(o).dtype == "uint8"), None)
        if first_uint8 is not None and (undefined[first_uint8] is None or
                                        not bool(undefined[first_uint8].reshape(-1)[0])):
            found.add(i)
    return found


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            pass
    return kids


def test_sigkill_loses_no_reported_case_and_resume_continues(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    expected = _uint8_indices(12)
    assert {0, 1} <= expected and len(expected) < 12  # findings early, and some ok cases

    proc = subprocess.Popen([*RUN, "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    reported: dict[int, Path] = {}
    finished: set[int] = set()
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 300
        for line in proc.stdout:
            workers = workers or _children(proc.pid)
            if m := DONE.search(line):
                finished.add(int(m.group(1)))
            if m := FOUND.search(line):
                reported[int(m.group(1))] = Path(m.group(3))
            if len(reported) >= 2 or time.monotonic() > deadline:
                break
        proc.send_signal(signal.SIGKILL)  # no chance to clean up or flush anything
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in workers:  # the worker lives in its own session; it is ours to end
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert len(reported) == 2, "campaign did not report two findings before the deadline"

    for index, path in reported.items():
        case = Case.load(path)  # every file reported before the kill is complete and valid
        assert case.verdict.kind == "int-flip" and case.origin["index"] == index
    state = ledger_of(out)
    done_before = set(range(state["below"])) | set(state["extra"])
    assert set(reported) <= done_before and done_before <= finished
    assert len(done_before) < 12

    resumed = subprocess.run([*RUN, "--out", str(out), "--resume", "--json"], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 1, resumed.stderr  # findings present
    redone = {int(m.group(1)) for m in DONE.finditer(resumed.stderr)}
    assert not redone & done_before  # nothing finished before the kill is run again
    assert redone | done_before == set(range(12))  # and the 12-case campaign is completed
    summary = json.loads(resumed.stdout)
    assert summary["cases"] == len(redone)
    files = {Case.load(p).origin["index"] for p in out.glob("*.pt")}
    assert files == expected  # every uint8 case found exactly once across both runs

"""``numfuzz dashboard`` (``report.dashboard``): a static page over a reports folder, read from a
store and nights written here; the numbers checked on the read board, the page for what it must
and must not hold (no script, nothing fetched), and the command's bad input. The browser check
(headless Chromium: no console error, a screenshot) is ``bench/dashboard_browser.py``; the test
below runs it where Chromium is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fuzzer.cli import main
from fuzzer.report import dashboard
from fuzzer.report.store import Finding, Store


def _finding(signature: str, value_class: int, arm: str, draft: Path | None = None) -> Finding:
    return Finding(signature=signature, kind="int-flip", device="cpu", dtype="float32",
                   op_chain="", title=f"cause {signature}", value_class=value_class, arm=arm,
                   draft_path=str(draft) if draft else None)


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    """Two nights: a class-1 cause seen on both (three raw hits), a class-4 one the second."""
    draft = tmp_path / "2030-01-02" / "a.md"
    draft.parent.mkdir(parents=True)
    draft.write_text("# a draft\n")
    with Store.in_reports(tmp_path) as store:
        one = _finding("a" * 16, 1, "cpp-gemm/models", draft)
        store.record(one, night="2030-01-01", key="k1", seen="2030-01-01T01:00:00Z")
        store.record(one, night="2030-01-02", key="k2", seen="2030-01-02T01:00:00Z")
        store.record(one, night="2030-01-02", key="k3", seen="2030-01-02T02:00:00Z")
        store.record(_finding("b" * 16, 4, "default/edge"), night="2030-01-02", key="k4",
                     seen="2030-01-02T03:00:00Z")
        refound = _finding("c" * 16, 1, "default/state")
        refound.ledger = "N7"  # one of numfuzz's own causes, found again: no new cause
        store.record(refound, night="2030-01-02", key="k5", seen="2030-01-02T04:00:00Z")
        store.record_known("fused-low-precision-roundtrip", "2030-01-02", "k6")
        store.record_arms("2030-01-01", {"cpp-gemm/models": {"cases": 10, "seconds": 1800,
                                                            "findings": 1}})
        store.credit("2030-01-01", "cpp-gemm/models", 1)
    for night, cases, waiting in (("2030-01-01", 40, []), ("2030-01-02", 60, ["x.pt"])):
        (tmp_path / night).mkdir(exist_ok=True)
        (tmp_path / night / "night.json").write_text(json.dumps({
            "cases": cases, "raw_findings": {"int-flip": 2, "crash": 1},
            "stage_seconds": {"fuzz": 600.0, "drafts": 60.0}, "status": "done",
            "backlog": 62 if waiting else 0,
            "unfinished": waiting, "buckets": [{"id": "b1", "what": "flip at exp", "cause":
                                                "a" * 16, "members": {"y.pt": "hit"},
                                                "waiting": waiting}]}))
    return tmp_path


def test_the_board_reads_causes_hits_per_night_and_yield(reports: Path) -> None:
    board = dashboard.read(reports)
    assert [n.name for n in board.nights] == ["2030-01-01", "2030-01-02"]
    assert [n.cases for n in board.nights] == [40, 60] and board.nights[0].raw == 3
    assert board.hits["a" * 16] == {"2030-01-01": 1, "2030-01-02": 2}
    assert board.new_causes() == {"2030-01-01": {1: 1}, "2030-01-02": {4: 1}}
    assert {n: (t["new"], t["refind"], t["known"]) for n, t in board.tallies.items()} == \
        {"2030-01-01": (1, 0, 0), "2030-01-02": (1, 1, 1)}
    assert board.arm_yield() == [("cpp-gemm/models", 2.0, 1)]  # 1 cause in half a CPU-hour


def test_the_page_lists_every_cause_best_first_with_links_and_draws_offline(reports) -> None:
    path = dashboard.write(reports)
    text = path.read_text()
    rows = re.findall(r"<tr><td>(\d)</td>", text)
    assert rows == ["1", "1", "4"], rows  # class 1 first
    assert "re-find of N7: cause cccc" in text
    assert '<a href="2030-01-02/a.md">draft</a>' in text  # relative: the folder can move
    assert "2030-01-01: 1 2030-01-02: 2" in text
    assert text.count("<svg") == 6
    assert "<script" not in text and not re.search(r"(src|href)=\"https?:", text)
    # SUMMARY.md's count of what waits, and of it the cases started tonight
    assert "Left for the next night: 62 case files, 1 of them started tonight" in text


def test_an_empty_store_still_gives_a_page(tmp_path: Path) -> None:
    Store.in_reports(tmp_path).close()
    text = dashboard.write(tmp_path).read_text()
    assert "No cause recorded yet." in text and "No queue recorded." in text


def test_the_command_writes_the_page_or_says_why_not_in_one_line(reports, tmp_path) -> None:
    runner = CliRunner()
    done = runner.invoke(main, ["dashboard", "--reports", str(reports)])
    assert done.exit_code == 0, done.output
    assert Path(done.output.strip()) == reports / "dashboard.html"
    missing = runner.invoke(main, ["dashboard", "--reports", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "no findings store" in missing.output
    assert "Traceback" not in missing.output


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium not installed")
def test_the_page_loads_in_headless_chromium_with_no_console_error(reports, tmp_path) -> None:
    bench = Path(__file__).resolve().parents[1] / "bench" / "dashboard_browser.py"
    done = subprocess.run([sys.executable, str(bench), "--reports", str(reports),
                           "--screenshot", str(tmp_path / "shot.png")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "shot.png").stat().st_size > 1000


@pytest.mark.parametrize("night", ['{"cases": "x"}', '{"cases": NaN}', '{"stage_seconds": [1]}',
                                   '[1, 2]', '{"raw_findings": {"crash": "two"}}'])
def test_a_night_file_of_another_shape_is_left_out_not_guessed(reports: Path, night: str) -> None:
    (reports / "2030-01-03").mkdir()
    (reports / "2030-01-03" / "night.json").write_text(night)
    board = dashboard.read(reports)
    assert [n.name for n in board.nights] == ["2030-01-01", "2030-01-02"]
    assert dashboard.write(reports).exists()

"""The findings store: hits and versions, status changes, one draft per signature, several writer
processes at once, and SIGKILL in the middle of writing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fuzzer.report.store import Finding, Store

ROOT = Path(__file__).resolve().parent.parent


def finding(sig: str = "a" * 16, torch: str = "2.13.0", **kw) -> Finding:
    return Finding(signature=sig, kind=kw.pop("kind", "int-flip"), device="cpu", dtype="float16",
                   op_chain="input gelu(%0) e8m0(%1)->out0", torch=torch, triton="none",
                   title=f"[numfuzz] {sig}", **kw)


def test_first_sighting_then_hits_and_versions(tmp_path):
    with Store.in_reports(tmp_path) as store:
        assert store.record(finding(reliability=(3, 3)), seen="2030-01-01T00:00:00Z")
        assert not store.record(finding(torch="2.14.0"), seen="2030-01-02T00:00:00Z")
        assert not store.record(finding(torch="2.14.0"), seen="2030-01-03T00:00:00Z")
        row = store.get("a" * 16)
    assert (row.hits, row.first_seen, row.last_seen) == (3, "2030-01-01T00:00:00Z",
                                                         "2030-01-03T00:00:00Z")
    assert row.versions == [("2.13.0", "none"), ("2.14.0", "none")]
    assert row.reliability == (3, 3) and row.status == "open"


def test_fixed_then_seen_again_reopens(tmp_path):
    with Store.in_reports(tmp_path) as store:
        store.record(finding())
        store.set_status("a" * 16, "fixed", reliability=(0, 3), fixed_in="2.14.0")
        fixed = store.get("a" * 16)
        store.record(finding(torch="2.15.0"))
        again = store.get("a" * 16)
    assert (fixed.status, fixed.fixed_in, fixed.reliability) == ("fixed", "2.14.0", (0, 3))
    assert (again.status, again.fixed_in) == ("open", None)


def test_status_and_columns_are_checked(tmp_path):
    with Store.in_reports(tmp_path) as store:
        store.record(finding())
        with pytest.raises(ValueError):
            store.set_status("a" * 16, "wontfix", reliability=(1, 1))
        with pytest.raises(ValueError):
            store.update("a" * 16, hits=100)
        assert store.get("a" * 16).hits == 1


def test_one_draft_claim_per_signature(tmp_path):
    with Store.in_reports(tmp_path) as one, Store.in_reports(tmp_path) as two:
        one.record(finding())
        assert one.claim_draft("a" * 16, "reports/d1/a.md")
        assert not two.claim_draft("a" * 16, "reports/d2/a.md")
        assert two.get("a" * 16).draft_path == "reports/d1/a.md"


def test_processed_marked_with_the_hit(tmp_path):
    with Store.in_reports(tmp_path) as store:
        store.record(finding(), night="2030-01-01#1", key="int-flip-abc.pt")
        store.record(finding(), night="2030-01-02#1", key="int-flip-def.pt")
        assert store.processed("2030-01-01#1", "int-flip-abc.pt")["outcome"] == "new"
        assert store.processed("2030-01-02#1", "int-flip-def.pt")["outcome"] == "recurring"
        assert store.processed("2030-01-02#1", "int-flip-abc.pt") is None
        assert store.earlier("int-flip-abc.pt")["signature"] == "a" * 16


WRITER = textwrap.dedent("""
    import sys
    from fuzzer.report.store import Finding, Store
    path, me, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = Store(path)
    for i in range(n):
        for sig in ("shared" + "0" * 10, f"{me}-{i}"):
            store.record(Finding(signature=sig, kind="int-flip", device="cpu", dtype="float32",
                                 op_chain="x", torch=me, triton="none",
                                 attribution={"pad": "x" * int(sys.argv[4])}))
        print(f"{me}-{i}", flush=True)
""")


def writers(path: Path, names: list[str], n: int, pad: int = 0) -> list[subprocess.Popen]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(n), str(pad)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for name in names]


def test_concurrent_writer_processes_lose_nothing(tmp_path):
    db = tmp_path / "findings.sqlite"
    procs = writers(db, ["w0", "w1", "w2", "w3"], n=40)
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with Store(db) as store:
        shared = store.get("shared" + "0" * 10)
        assert shared.hits == 4 * 40
        assert sorted(t for t, _ in shared.versions) == ["w0", "w1", "w2", "w3"]
        assert len(store.findings()) == 1 + 4 * 40
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_sigkill_mid_write_loses_no_committed_row(tmp_path):
    db = tmp_path / "findings.sqlite"
    (proc,) = writers(db, ["victim"], n=100000, pad=200000)  # big rows: long transactions
    committed = []
    for line in proc.stdout:
        committed.append(line.strip())
        if len(committed) == 25:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    committed += [ln.strip() for ln in proc.stdout.read().splitlines() if ln.strip()]
    assert proc.returncode == -signal.SIGKILL
    with Store(db) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        present = {f.signature for f in store.findings()}
        assert set(committed) <= present
        hits = store.get("shared" + "0" * 10).hits
        assert len(committed) <= hits <= len(committed) + 1  # the one in flight, if it committed
        store.record(finding("after-the-kill"))
        assert store.get("after-the-kill").hits == 1

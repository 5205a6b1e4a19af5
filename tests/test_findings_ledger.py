"""FINDINGS.md is generated from fuzzer/causes.toml: the committed file must be what the
generator writes, and the check that says so must be able to fail."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "findings_ledger.py"


def _ledger():
    spec = importlib.util.spec_from_file_location("findings_ledger", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_findings_md_is_current() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_check_fails_on_a_stale_ledger(tmp_path: Path) -> None:
    """A ledger edited without regenerating FINDINGS.md is caught; regenerated, it passes."""
    ledger = _ledger()
    stale = tmp_path / "FINDINGS.md"
    stale.write_text(ledger.FINDINGS.read_text().replace("causes", "cases", 1))
    assert ledger.main(["--check", "--out", str(stale)]) == 1
    assert ledger.main(["--out", str(stale)]) == 0
    assert ledger.main(["--check", "--out", str(stale)]) == 0


def test_every_cause_has_every_field() -> None:
    ledger = _ledger()
    import tomllib
    causes = tomllib.loads(ledger.CAUSES.read_text())["cause"]
    missing = [(c.get("id"), f) for c in causes for f in ledger.REQUIRED if f not in c]
    assert not missing
    assert all(c["value_class"] in ledger.CLASSES for c in causes)

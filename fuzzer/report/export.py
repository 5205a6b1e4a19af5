"""Open root causes as regression tests: one self-contained xfail pytest module per cause.

Each module is the cause's ``repro.py`` (the code that ran, judged by numfuzz's own rules) plus a
test that expects it to diverge: ``xfail(strict=True, raises=StillDiverges)``. While the bug is
there the test xfails; when a torch fixes it, the repro exits 0, the test passes, and strict xfail
turns that into a failure that says "fixed: close the issue". A repro that cannot run raises
something else, which is reported as an error, never hidden as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

from fuzzer.corpus.case import Case
from fuzzer.corpus.files import atomic_write
from fuzzer.reduce.repro import repro_source
from fuzzer.report.store import Finding

TEST = '''

import pytest  # noqa: E402


class StillDiverges(AssertionError):
    """The divergence numfuzz recorded still reproduces on this torch."""


@pytest.mark.xfail(raises=StillDiverges, strict=True, reason={reason!r})
def test_numfuzz_{signature}():
    code = main()
    if code == 2:
        raise RuntimeError("the repro could not run (see its output above)")
    if code == 1:
        raise StillDiverges({summary!r})
'''


def pytest_module(finding: Finding, out_dir: Path) -> Path:
    """Write ``out_dir/numfuzz_<signature>/test_numfuzz_<signature>.py`` (and its inputs)."""
    case = Case.load(finding.case_path or "")
    where = out_dir / f"numfuzz_{finding.signature}"
    where.mkdir(parents=True, exist_ok=True)
    reason = f"numfuzz root cause {finding.signature}: {finding.title.removeprefix('[numfuzz] ')}"
    if finding.draft_path:
        reason += f" (draft {finding.draft_path})"
    text = repro_source(case, where) + TEST.format(
        reason=reason, signature=finding.signature,
        summary=case.verdict.summary() if case.verdict else finding.summary)
    return atomic_write(where / f"test_numfuzz_{finding.signature}.py", text)

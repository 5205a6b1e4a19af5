"""Recheck: open root causes replayed k times on the installed torch, their status updated.

k/k stays open, 0/k with every run clean is fixed (``fixed_in`` = this torch), anything between
is flaky. Each result says per cause "still reproduces" or "fixed in this torch" (``outcome``);
for a cause filed upstream (``findings --filed``) that is now fixed, it carries a ready comment
for the issue (``upstream.close_comment``). Serves the nightly's recheck stage and ``numfuzz
findings --recheck``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fuzzer.corpus.case import Case, CaseError
from fuzzer.device import Device
from fuzzer.execute.pool import Runners
from fuzzer.judge.key import same_divergence
from fuzzer.judge.kinds import Kind
from fuzzer.report.store import Finding, Store
from fuzzer.report.upstream import close_comment
from fuzzer.triage.attribute import run_fresh

Log = Callable[[str], None]


@dataclass
class Recheck:
    signature: str
    title: str
    before: str
    after: str
    reproduced: int
    k: int
    message: str = ""
    upstream_state: str = ""  # filed / wontfix, as recorded
    upstream_url: str = ""
    comment: str = ""  # for a filed cause now fixed: what to post on its issue

    def said(self) -> str:
        """Per cause, in words."""
        runs = f"{self.reproduced}/{self.k}"
        if self.message:
            return self.message
        return {"open": f"still reproduces ({runs} runs)",
                "fixed": f"fixed in this torch ({runs} runs reproduce, every run clean)",
                "flaky": f"flaky ({runs} runs reproduce)"}.get(self.after, self.after)


def recheck(store: Store, pool: Runners, *, k: int = 3, seen_before: str | None = None,
            log: Log | None = None, stop: Callable[[], bool] | None = None,
            on_error: Callable[[str, BaseException], None] | None = None) -> list[Recheck]:
    """Replay open (and flaky) findings k times on the installed torch: k/k stays open, 0/k with
    every run clean is fixed (``fixed_in`` = this torch), anything between is flaky. ``stop``
    ends it early (the night's deadline); the rest are rechecked another night. A finding whose
    recheck raises keeps its status and goes to ``on_error`` (signature, error)."""
    results = []
    for finding in store.findings():
        if finding.status == "fixed":
            continue
        if stop is not None and stop():
            if log:
                log("recheck stopped at the deadline")
            break
        if seen_before is not None and finding.last_seen >= seen_before:
            continue  # seen tonight: it just reproduced
        try:
            result = _recheck_one(store, pool, finding, k)
        except Exception as err:  # one finding's failure is its own, never the recheck's
            if on_error is not None:
                on_error(finding.signature, err)
            elif log:
                log(f"recheck {finding.signature}: harness error: {type(err).__name__}: {err}")
            continue
        if log:
            log(f"recheck {finding.signature}: {result.said()}")
        results.append(result)
    return results


def _recheck_one(store: Store, pool: Runners, finding: Finding, k: int) -> Recheck:
    import torch

    result = Recheck(finding.signature, finding.title, finding.status, finding.status, 0, k,
                     upstream_state=finding.upstream_state or "",
                     upstream_url=finding.upstream_url or "")
    try:
        case = Case.load(finding.case_path or "")
    except CaseError as err:
        result.message = f"cannot load the case: {err}"
        return result
    if Device(case.device).is_cuda and not torch.cuda.is_available():
        result.message = "needs CUDA; not rechecked here"
        return result
    target = case.verdict
    assert target is not None  # a finding's kept case is the minimized one, with its verdict
    verdicts = [run_fresh(pool.get(case.device), case) for _ in range(k)]
    result.reproduced = sum(same_divergence(target, v) for v in verdicts)
    if result.reproduced == k:
        result.after = "open"
    elif result.reproduced:
        result.after = "flaky"
    elif all(not v.is_finding and v.kind not in (Kind.SKIP, Kind.EXPECTED) for v in verdicts):
        # ok, or compiled now no worse than eager; "expected" still diverges by default
        result.after = "fixed"
    else:
        kinds = ", ".join(sorted({v.kind for v in verdicts}))
        result.message = f"does not reproduce but is not clean either ({kinds}); status kept"
        return result
    fixed_in = str(torch.__version__) if result.after == "fixed" else None
    store.set_status(finding.signature, result.after, reliability=(result.reproduced, k),
                     fixed_in=fixed_in)
    if fixed_in and result.upstream_state == "filed":
        result.comment = close_comment(result.upstream_url, fixed_in, k, k)
    return result

"""The C++ GEMM template's heap overflow (RESULTS §28-§29, the kept case
``bench/raw/heap_corruption_cpp_gemm_min_case.pt``) through a real night, as a nightly on the
CPU runs it (malloc checking on): what its draft says, its reliability in fresh compiles and
which options of its surface it needs.

A benchmark, not a test: every run is a max-autotune compile (10-20 s here), and the overflow
aborts only on CPUs where the template picks the blocking that overruns (it did not on one CI
machine), so the suite plants its heap overflow with a fake backend instead
(``tests/test_nightly.py::test_the_draft_of_a_heap_overflow_reads_as_one``).

    python bench/heap_overflow_night.py [--k 3] [--out DIR]

Prints one JSON object: title, value class, reliability, what the surface needs, seconds.
Exit 0 when the night drafted it as a heap corruption, 1 when it did not (this CPU or torch
does not show it), 2 when this torch or CPU has no C++ GEMM template.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzzer.campaign.settings import Settings  # noqa: E402
from fuzzer.corpus.case import Case  # noqa: E402
from fuzzer.device import Device  # noqa: E402
from fuzzer.execute import memcheck, surface  # noqa: E402
from fuzzer.execute.pool import RunnerPool  # noqa: E402
from fuzzer.nightly.job import run_night  # noqa: E402
from fuzzer.nightly.night import NightSettings  # noqa: E402
from fuzzer.report.store import Store  # noqa: E402

KEPT = ROOT / "bench" / "raw" / "heap_corruption_cpp_gemm_min_case.pt"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=3, help="fresh compiles for reliability")
    parser.add_argument("--out", type=Path, default=None, help="reports folder (default: temp)")
    args = parser.parse_args()
    if not surface.have("cpp_gemm_template") or memcheck.library() is None:
        print("no C++ GEMM template or no glibc malloc checking here", file=sys.stderr)
        return 2
    reports = args.out or Path(tempfile.mkdtemp(prefix="numfuzz-heap-night-"))
    kept = Case.load(KEPT)
    os.utime(kept.save(reports / "corpus" / kept.file_name()), (1_000_000, 1_000_000))
    campaign = Settings(device=Device("cpu"), cases=0, seed=7, malloc_check=True)
    settings = NightSettings(campaign=campaign, reports=reports, k=args.k, max_findings=1,
                             bisect=False)
    pool = RunnerPool(timeout=300, base_env=memcheck.environment())
    start = time.monotonic()
    lines: list[str] = []
    try:
        run_night(settings, log=lambda line: (lines.append(line), print(line, file=sys.stderr)),
                  pool=pool)
    finally:
        pool.close()
    with Store.in_reports(reports) as store:
        found = [f for f in store.findings() if f.kind == "memory-unsafe"]
    result: dict = {"seconds": round(time.monotonic() - start), "reports": str(reports)}
    if found:
        text = Path(found[0].draft_path).read_text()
        result.update(title=text.splitlines()[0], value_class=found[0].value_class,
                      reliability=next((ln for ln in text.splitlines()
                                        if ln.startswith("Reproduces ")), "")[:40],
                      surface=next((ln for ln in text.splitlines()
                                    if ln.startswith("Its surface's options")), ""))
    else:
        result["night"] = lines[-6:]
    print(json.dumps(result, indent=1))
    return 0 if found and "heap corruption" in result["title"] else 1


if __name__ == "__main__":
    sys.exit(main())

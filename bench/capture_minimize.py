"""Captured user models: size before/after minimization and oracle calls, per model file.

    python bench/capture_minimize.py [--out bench/raw/capture_minimize.json]

Each model in tests/models/ is captured, checked to diverge like the file itself (real Inductor
where the model really diverges on this CPU, else a planted bug through a fake backend), then
minimized with the defaults of ``numfuzz minimize``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fuzzer.execute.workers import LocalRunner  # noqa: E402
from fuzzer.reduce.minimize import minimize  # noqa: E402
from fuzzer.user.capture import capture_file  # noqa: E402
from fuzzer.user.verify import verify_capture  # noqa: E402

RUNS = [  # (model file, backend): real Inductor first, planted where CPU Inductor agrees
    ("conv_gelu_e8m0.py", "inductor"),
    ("erf_saturation.py", "tests.fakes:erf_ulp"),
    ("attention_block.py", "tests.fakes:inject_inf"),
    ("buffer_linear.py", "tests.fakes:inject_inf"),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=REPO / "bench/raw/capture_minimize.json")
    args = parser.parse_args()
    rows = []
    inductor = LocalRunner("cpu", threads=2, timeout=300, warmup=True)
    fake = LocalRunner("cpu", threads=2, timeout=300, warmup=False)
    try:
        for name, backend in RUNS:
            runner = inductor if backend == "inductor" else fake
            start = time.monotonic()
            case = capture_file(REPO / "tests/models" / name, 0).case("cpu")
            case.recipe = case.recipe.with_knob(backend=backend)
            check = verify_capture(case, runner)
            verify_s = time.monotonic() - start
            row = {"model": name, "backend": backend, "reproduces": check.reproduces,
                   "message": check.message, "verify_s": round(verify_s, 1)}
            if check.reproduces:
                with tempfile.TemporaryDirectory() as slips:
                    result = minimize(check.case, runner, corpus=Path(slips))
                row |= {"kind": result.case.verdict.kind, "ops_before": result.original_ops,
                        "ops_after": result.final_ops,
                        "elements_before": result.original_elements,
                        "elements_after": result.final_elements, "calls": result.calls,
                        "cache_hits": result.cache_hits, "seconds": round(result.seconds, 1),
                        "reliability": list(result.reliability),
                        "final_ops": result.case.graph.op_names()}
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        inductor.close()
        fake.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()

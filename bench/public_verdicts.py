"""numfuzz's verdict on each public-issue model file (tests/models/public), beside what upstream
decided: a markdown table for bench/RESULTS.md.

    .venv/bin/python bench/public_verdicts.py > bench/raw/public_verdicts.md

Per file: the upstream decision and the maintainers' rule from its docstring; the verdict on the
file's own Model (judged on its outputs); the verdict on its capture (the graph numfuzz minimizes,
judged with its heads); and, by the element-wise check of tests/test_public_models.py, on how many
elements compiled is further from float64 than eager.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzzer.corpus.replay import replay_case  # noqa: E402
from fuzzer.execute.workers import LocalRunner  # noqa: E402
from fuzzer.user.capture import capture_file  # noqa: E402
from tests.test_public_models import PUBLIC, judged  # noqa: E402


def docstring_field(path: Path, name: str) -> str:
    for line in path.read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    return "?"


def main() -> None:
    runner = LocalRunner("cpu", threads=1, timeout=300, warmup=True)
    print("| file | upstream decision | maintainers' rule | numfuzz: Model | numfuzz: capture "
          "| elements further |")
    print("|---|---|---|---|---|---|")
    try:
        for path in PUBLIC:
            own, counts = judged(path, runner)
            captured = replay_case(capture_file(path).case("cpu"), runner=runner).verdict
            decision = re.sub(r"\s*[(:].*", "", docstring_field(path, "Upstream decision"))
            issue = docstring_field(path, "Upstream").rsplit("/", 1)[-1]
            rule = docstring_field(path, "Maintainers' rule says")
            further = ", ".join("dtype" if n < 0 else str(n) for n in counts)
            print(f"| `{path.name}` (#{issue}) | {decision} | {rule} | {own.kind} "
                  f"| {captured.kind} | {further} |", flush=True)
    finally:
        runner.close()


if __name__ == "__main__":
    main()

"""Issue 59's index rule on the index causes N2, N13 and N14 (FINDINGS.md): each program run
through numfuzz's own runner in this process (real Inductor, CPU), its verdict, and per
differing element eager's and compiled's index and what is wrong with compiled's
(``Element.fault``: out of range, not the extremum, not the first of equal values).

    python bench/index_reread.py

Prints one line per program (RESULTS §37 records its output on torch 2.15.0).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzzer.execute.runner import run_task  # noqa: E402
from fuzzer.execute.task import Task  # noqa: E402
from fuzzer.gen.grammar import Builder  # noqa: E402

NAN, INF = float("nan"), float("inf")


def one(op: str, x: torch.Tensor, **attrs: object) -> tuple:
    b = Builder(random.Random(0), "float32")
    node = b.input(tuple(x.shape))
    b.graph.outputs = [b.op(op, node, **attrs)]
    return b.graph, {str(node): x}


def n2_input() -> torch.Tensor:
    x = torch.randn(1, 1, 5, 7, generator=torch.Generator().manual_seed(0))
    x[0, 0, 3, 4] = NAN  # not first in its (overlapping) windows
    return x


CASES = {
    "N2 adaptive_max_pool2d (5x7 -> 3) with a NaN not first in its window":
        one("adaptive_max_pool2d_indices", n2_input(), size=3, pick=1),
    "N13 max_pool2d(padding=1) of all -inf":
        one("max_pool2d_indices", torch.full((1, 1, 4, 4), -INF), kernel=3, stride=2,
            padding=1, dilation=1, ceil=False, pick=1),
    "N14 adaptive_max_pool2d(3) of [0.0, nan]":
        one("adaptive_max_pool2d_indices", torch.tensor([[[[0.0, NAN]]]]), size=3, pick=1),
}


def main() -> int:
    print(f"torch {torch.__version__}")
    for name, (graph, draw) in CASES.items():
        verdict = run_task(Task(graph=graph, draws=[draw])).verdict
        out = verdict.diverging
        seen = [(e.eager_index, e.compiled_index, e.fault)
                for e in (out.details.elements if out else [])][:3]
        print(f"{name}: {verdict.kind}; (eager index, compiled index, fault): {seen}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

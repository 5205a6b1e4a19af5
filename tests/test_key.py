"""The one divergence key and the one set of per-output rules: the oracle, the minimizer, triage
and ``repro.py`` must all answer "is this the same divergence?" alike."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fuzzer.corpus.case import Case
from fuzzer.corpus.replay import replay_case
from fuzzer.gen import inputs
from fuzzer.gen.grammar import Builder
from fuzzer.judge import oracle, rules
from fuzzer.judge.key import DivergenceKey, error_type, same_divergence
from fuzzer.judge.oracle import Verdict
from fuzzer.reduce.repro import write_repro

REPO = Path(__file__).resolve().parents[1]


def test_the_key_is_kind_and_output_node_for_values_and_the_error_type_for_crashes() -> None:
    flip = Verdict("int-flip", output=0, node=7)
    assert same_divergence(flip, Verdict("int-flip", output=1, node=7))  # positions may move
    assert not same_divergence(flip, Verdict("int-flip", output=0, node=8))
    assert not same_divergence(flip, Verdict("nonfinite", output=0, node=7))
    crash = Verdict("crash", message="RuntimeError: boom (at x.py:3)")
    assert same_divergence(crash, Verdict("crash", message="RuntimeError: other words"))
    assert not same_divergence(crash, Verdict("crash", message="LoweringException: boom"))
    assert not same_divergence(Verdict("ok"), Verdict("ok"))  # nothing is not a divergence
    assert error_type("BackendCompilerFailed: backend='inductor' raised:") == \
        "BackendCompilerFailed"
    assert DivergenceKey.of(flip).to_dict() == {"kind": "int-flip", "node": 7, "error": ""}


def _triples(seed: int) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, object]]:
    """Random outputs with planted disagreements: discrete codes, floats with inf/NaN, shapes."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(40):
        e = torch.randint(0, 4, (6,), generator=gen).to(torch.uint8)
        c = torch.where(torch.rand(6, generator=gen) < 0.3, e + 1, e).to(torch.uint8)
        r = torch.where(torch.rand(6, generator=gen) < 0.5, c, e).double()
        undefined = torch.rand(6, generator=gen) < 0.2
        out.append((e, c, r, undefined))
        x = torch.randn(6, generator=gen)
        y = x + torch.where(torch.rand(6, generator=gen) < 0.3, 1e-2, 0.0)
        y = torch.where(torch.rand(6, generator=gen) < 0.1, torch.inf, y)
        x = torch.where(torch.rand(6, generator=gen) < 0.1, torch.nan, x)
        out.append((x, y, x.double(), None))
    out.append((torch.zeros(3), torch.zeros(4), torch.zeros(3, dtype=torch.float64), None))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_the_oracle_decides_with_the_rules_repro_files_embed(seed: int) -> None:
    kinds = set()
    for e, c, r, undefined in _triples(seed):
        verdict = oracle.judge([e], [c], [r], [None], [0], [undefined])
        expected = rules.output_kind(e, c, r, oracle.TOLERANCE["float32"], undefined)
        assert verdict.kind == expected, (e, c, r, undefined)
        kinds.add(expected)
    assert {"ok", "int-flip", "nonfinite", "crash"} <= kinds  # the battery exercises each rule


def _erf_case() -> Case:
    """erf feeding an E8M0 head: the erf_ulp fake backend flips it (see test_minimize)."""
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 8))
    b.graph.outputs = [b.op("e8m0", b.op("erf", b.op("mul_scalar", x, value=40.0)), eps=1e-30)]
    return Case(graph=b.graph, inputs=dict(inputs.draws(b.graph, 0, 1)[0][1]),
                backend="tests.fakes:erf_ulp")


def _run(path: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                          timeout=600).returncode


def test_repro_exit_status_equals_the_oracles_verdict(fake_runner, tmp_path: Path) -> None:
    """The repro embeds the rules verbatim and answers 1 exactly where the oracle sees the
    case's divergence, 0 where it does not, 2 where it cannot run."""
    case = _erf_case()
    case.verdict, _ = replay_case(case, runner=fake_runner)
    assert case.verdict.kind == "int-flip", case.verdict.summary()
    repro = write_repro(case, tmp_path / "flip")
    assert rules.embedded_source() in repro.read_text()
    assert _run(repro) == 1
    for backend in ("eager", "tests.fakes:inject_inf"):  # no flip: the oracle agrees it is gone
        other = Case(graph=case.graph, inputs=case.inputs, backend=backend)
        seen, _ = replay_case(other, runner=fake_runner)
        text = repro.read_text().replace("from tests.fakes import erf_ulp as BACKEND",
                                         f"BACKEND = {backend!r}" if ":" not in backend else
                                         "from tests.fakes import inject_inf as BACKEND")
        (tmp_path / "other.py").write_text(text)
        assert _run(tmp_path / "other.py") == int(same_divergence(case.verdict, seen))
    broken = repro.read_text().replace("def get_inputs():", "def get_inputs():\n    1 / 0")
    (tmp_path / "broken.py").write_text(broken)
    assert _run(tmp_path / "broken.py") == 2


def test_a_zero_dim_input_renders_and_runs(tmp_path: Path) -> None:
    from fuzzer.reduce.repro import _tensor_source

    namespace: dict = {"torch": torch}
    exec(_tensor_source("x", torch.tensor(2.5)).strip(), namespace)
    exec(_tensor_source("y", torch.zeros(0, 3)).strip(), namespace)
    assert namespace["x"].shape == () and float(namespace["x"]) == 2.5
    assert namespace["y"].shape == (0, 3)

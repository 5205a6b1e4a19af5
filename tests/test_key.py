"""The one divergence key and the one set of per-output rules: the oracle, the minimizer, triage
and ``repro.py`` must all answer "is this the same divergence?" alike."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from fuzzer.corpus.case import Case
from fuzzer.corpus.replay import replay_case
from fuzzer.execute.recipe import Recipe
from fuzzer.gen import inputs
from fuzzer.gen.grammar import Builder
from fuzzer.judge import oracle, rules
from fuzzer.judge.key import DivergenceKey, error_type, same_divergence
from fuzzer.judge.verdict import Verdict
from fuzzer.reduce.repro import write_repro
from tests.conftest import run_repro

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
    assert DivergenceKey.of(flip).to_dict() == {"kind": "int-flip", "node": 7, "error": "",
                                                "frames": [], "gradient": False, "state": False}
    deep = Verdict("crash", message="RuntimeError: boom", frames=["torch/_inductor/a.py:f"])
    assert not same_divergence(crash, deep)  # same type, raised elsewhere in torch
    assert not same_divergence(flip, Verdict("weak-flip", output=0, node=7))  # evidence counts


def _triples(seed: int) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, object]]:
    """Random outputs with planted disagreements: discrete codes, floats with inf/NaN, shapes."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(40):
        e = torch.randint(0, 4, (6,), generator=gen).to(torch.uint8)
        step = torch.randint(1, 4, (6,), generator=gen)  # one step is weak, more is strong
        c = torch.where(torch.rand(6, generator=gen) < 0.3, e + step, e).to(torch.uint8)
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
    assert {"ok", "int-flip", "weak-flip", "benign", "nonfinite", "meta"} <= kinds  # each rule


def _erf_case() -> Case:
    """erf feeding an E8M0 head: the erf_quarter fake backend flips it (see test_minimize)."""
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 8))
    b.graph.outputs = [b.op("e8m0", b.op("erf", b.op("mul_scalar", x, value=0.5)), eps=1e-30)]
    return Case(graph=b.graph, inputs=dict(inputs.draws(b.graph, 0, 1)[0][1]),
                recipe=Recipe("tests.fakes:erf_quarter"))


def test_repro_exit_status_equals_the_oracles_verdict(fake_runner, tmp_path: Path) -> None:
    """The repro embeds the rules verbatim and answers 1 exactly where the oracle sees the
    case's divergence, 0 where it does not, 2 where it cannot run."""
    case = _erf_case()
    case.verdict = replay_case(case, runner=fake_runner).verdict
    assert case.verdict.kind == "int-flip", case.verdict.summary()
    repro = write_repro(case, tmp_path / "flip")
    assert rules.embedded_source() in repro.read_text()
    assert run_repro(repro).returncode == 1
    for backend in ("eager", "tests.fakes:inject_inf"):  # no flip: the oracle agrees it is gone
        other = Case(graph=case.graph, inputs=case.inputs, recipe=Recipe(backend))
        seen = replay_case(other, runner=fake_runner).verdict
        text = repro.read_text().replace("from tests.fakes import erf_quarter as BACKEND",
                                         f"BACKEND = {backend!r}" if ":" not in backend else
                                         "from tests.fakes import inject_inf as BACKEND")
        (tmp_path / "other.py").write_text(text)
        expected = int(same_divergence(case.verdict, seen))
        assert run_repro(tmp_path / "other.py").returncode == expected
    broken = repro.read_text().replace("def get_inputs():", "def get_inputs():\n    1 / 0")
    (tmp_path / "broken.py").write_text(broken)
    assert run_repro(tmp_path / "broken.py").returncode == 2


@pytest.mark.parametrize("tensor", [
    torch.tensor(2.5), torch.zeros(0, 3), torch.zeros(0), torch.tensor([7], dtype=torch.int64),
    torch.arange(12.0).reshape(3, 4).t(), torch.arange(12.0).reshape(3, 4)[:, 1:3],
    torch.tensor([1.0, -0.0]).expand(3, 2), torch.randn(2, 3, 4).permute(2, 0, 1)],
    ids=["0-d", "empty-2d", "empty", "int64", "transposed", "sliced", "expanded", "permuted"])
def test_every_input_shape_renders_with_its_values_and_strides(tensor: torch.Tensor) -> None:
    from fuzzer.reduce.repro import _tensor_source

    namespace: dict = {"torch": torch}
    exec(_tensor_source("x", tensor).strip(), namespace)
    x = namespace["x"]
    assert (x.shape, x.dtype, x.stride()) == (tensor.shape, tensor.dtype, tensor.stride())
    assert torch.equal(x, tensor) and torch.equal(x.signbit(), tensor.signbit())


def test_a_divergence_still_shown_on_another_output_matches_and_is_focused_on() -> None:
    from fuzzer.judge.key import focus
    from fuzzer.judge.verdict import OutputVerdict

    grad = OutputVerdict(1, 0, "accuracy", "float32", {"gradient_of": 0})
    target = Verdict("accuracy", output=1, node=0, outputs=[
        OutputVerdict(0, 0, "ok", "float32"), grad])
    assert DivergenceKey.of(target).gradient
    # a forward output on node 0 diverging is another divergence than input 0's gradient
    forward = Verdict("accuracy", output=0, node=0, outputs=[
        OutputVerdict(0, 0, "accuracy", "float32"), OutputVerdict(1, 0, "ok", "float32",
                                                                  {"gradient_of": 0})])
    assert not same_divergence(target, forward)
    both = Verdict("nonfinite", output=0, node=3, outputs=[
        OutputVerdict(0, 3, "nonfinite", "float32"), grad])
    assert same_divergence(target, both)  # worse elsewhere, the target's still there
    focused = focus(target, both)
    assert (focused.kind, focused.output, focused.node) == ("accuracy", 1, 0)
    assert DivergenceKey.of(focused) == DivergenceKey.of(target)

"""The minimizer: planted divergences shrink to their known minimal graphs; slips are saved, flaky
cases refused, repeated candidates served from the cache; repro.py reproduces in a subprocess."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from fuzzer import clock
from fuzzer.corpus.case import Case
from fuzzer.corpus.replay import replay_case
from fuzzer.execute.recipe import Recipe
from fuzzer.gen import inputs
from fuzzer.gen.grammar import Builder
from fuzzer.reduce.minimize import NotReproducible, Oracle, minimize
from fuzzer.reduce.repro import write_repro
from fuzzer.reduce.shrinker import Shrinker
from fuzzer.reduce.size import mantissa_bits, size_key
from tests.conftest import minimized, python, run_repro

REPO = Path(__file__).resolve().parents[1]


def erf_saturation_case(backend: str = "tests.fakes:erf_quarter") -> Case:
    """A 12-op model whose erf feeds an E8M0 head at erf(tanh(1)) = 0.7175, far from the powers
    of two where E8M0 flips, so a compiled erf a quarter of the truth is a strong flip. Known
    minimum: erf -> e8m0."""
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 4, 8, 8))
    h = b.op("relu", b.conv(x, 8, 3))
    side = b.op("sigmoid", h)
    h = b.op("tanh", b.op("erf", b.op("mul_scalar", h, value=40.0)))
    h = b.op("add", h, b.op("mul_scalar", side, value=0.0))
    head = b.op("e8m0", b.op("erf", b.op("mul_scalar", h, value=1.0)), eps=1e-30)
    other = b.op("gt_scalar", side, value=0.5)
    b.graph.outputs = [head, other]
    return Case(graph=b.graph, inputs=dict(inputs.draws(b.graph, 0, 1)[0][1]),
                recipe=Recipe(backend))


def exp_chain_case() -> Case:
    """exp overflows in the planted compiler where eager is finite. Known minimum: exp -> output."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4, 16))
    h = b.linear(b.op("tanh", x), 16)
    h = b.op("mul_scalar", b.op("exp", b.op("add_scalar", h, value=1.5)), value=0.5)
    b.graph.outputs = [h]
    return Case(graph=b.graph, inputs=dict(inputs.draws(b.graph, 0, 1)[0][1]),
                recipe=Recipe("tests.fakes:exp_overflow"))


def with_verdict(case: Case, runner) -> Case:
    case.verdict = replay_case(case, runner=runner).verdict
    assert case.verdict.is_finding, case.verdict.summary()
    return case


def test_planted_int_flip_shrinks_to_erf_then_e8m0(fake_runner, tmp_path):
    case = with_verdict(erf_saturation_case(), fake_runner)
    result = minimized(case, fake_runner, tmp_path)
    assert result.case.graph.op_names() == ["erf", "e8m0"]
    assert result.final_elements == 1
    assert result.original_ops == 12 and result.final_ops == 2
    # graph reduction ends between the 3 opening and the 3 closing reproducibility runs
    assert 3 < result.calls_to_final_ops <= result.calls - 3
    assert ("calls until the op count settled", "", str(result.calls_to_final_ops)) \
        in result.table()
    assert result.reliability == (3, 3)
    assert result.case.verdict.kind == "int-flip"


def test_planted_nonfinite_shrinks_to_exp(fake_runner, tmp_path):
    case = with_verdict(exp_chain_case(), fake_runner)
    assert case.verdict.kind == "nonfinite"
    result = minimized(case, fake_runner, tmp_path)
    names = result.case.graph.op_names()
    # The exp's own output shows the overflow: it becomes the output, and the mul after it goes
    # (the output node pinned the divergence there before output_earlier_node).
    assert names == ["exp"], names
    assert result.passes["output_earlier_node"].adopted >= 1 and result.fixpoint
    assert result.case.verdict.kind == "nonfinite" and result.reliability == (3, 3)
    assert result.final_elements < case.inputs[str(case.graph.input_ids()[0])].numel() * 2


def test_the_time_budget_stops_the_minimizer_and_leaves_the_closing_check_its_time(
        fake_runner, sim_clock):
    """``seconds`` covers both k/k checks: the shrinker stops (no fixpoint, the budget said so)
    early enough to leave the closing check the time the opening one took. On the simulated
    clock (a run costs 1 s), so where it stops does not depend on the machine's speed."""
    case = with_verdict(erf_saturation_case(), fake_runner)
    start = clock.now()
    result = minimize(case, fake_runner, k=3, seconds=10)
    assert not result.fixpoint and str(result.stopped) == "time budget reached"
    assert result.seconds == clock.now() - start == result.calls  # every call was a run
    assert result.seconds <= 10 + 1  # one call past its share at most, the 3 closing ones in
    assert result.reliability == (3, 3) and len(result.case.graph) < len(case.graph)


def test_a_candidate_is_adopted_only_when_smaller_in_the_total_order(fake_runner):
    case = with_verdict(erf_saturation_case(), fake_runner)
    shrinker = Shrinker(case, Oracle(case.verdict, fake_runner))
    same_size = erf_saturation_case()
    bigger = erf_saturation_case()
    bigger.graph.outputs.append(bigger.graph.op_ids()[2])
    for candidate in (bigger, same_size):
        assert shrinker.consider(candidate) is False
    assert shrinker.calls == 0 and shrinker.best is case  # never even run
    assert size_key(case) > size_key(shrinker._cut(case.graph.op_ids()[:1]))
    rounded = Case(graph=case.graph, inputs={k: v.round() for k, v in case.inputs.items()},
                   recipe=case.recipe)
    assert size_key(rounded) < size_key(case)  # same ops and elements, fewer digits
    assert mantissa_bits(torch.tensor([0.0, 1.0, -2.0, 0.75, 1.5])) == 2
    assert mantissa_bits(torch.tensor([0.1])) > 20


def test_repeated_candidate_is_a_cache_hit_not_an_oracle_call(fake_runner):
    case = with_verdict(erf_saturation_case(), fake_runner)
    shrinker = Shrinker(case, Oracle(case.verdict, fake_runner))
    culprit = case.graph.node(case.graph.outputs[0]).inputs[0]  # the planted erf
    first = shrinker.consider(shrinker._cut([culprit]))  # its eager value: no divergence left
    calls = shrinker.calls
    again = shrinker.consider(shrinker._cut([culprit]))
    assert shrinker.calls == calls and shrinker.hits == 1
    assert again is False  # seen before: never progress twice, so the fixpoint terminates
    assert first is False and shrinker.best is case


def test_a_candidate_that_diverges_differently_is_saved_as_a_slip(fake_runner, tmp_path):
    case = with_verdict(erf_saturation_case(), fake_runner)
    oracle = Oracle(case.verdict, fake_runner, corpus=tmp_path)
    shrinker = Shrinker(case, oracle)
    slip = erf_saturation_case(backend="tests.fakes:inject_inf")
    slip.graph.outputs = [slip.graph.op_ids()[2]]  # a float output for the planted inf
    slip.graph.remove_dead()  # smaller than the case, so it is run at all
    assert shrinker.consider(slip) is False
    assert shrinker.best is case
    assert len(oracle.slips) == 1
    saved = Case.load(oracle.slips[0])
    assert saved.verdict.kind == "nonfinite"
    assert saved.origin["slipped_from"] == "int-flip"


def test_flaky_case_is_refused_with_a_clear_message(fake_runner):
    case = erf_saturation_case(backend="tests.fakes:flaky")
    case.graph.outputs = [case.graph.outputs[0]]
    case.graph.remove_dead()
    from fuzzer.judge.verdict import Verdict

    case.verdict = Verdict("int-flip", 0, case.graph.outputs[0])
    with pytest.raises(NotReproducible, match=r"flaky: [12]/3"):
        minimize(case, fake_runner)


def test_case_that_no_longer_reproduces_is_refused(fake_runner):
    case = with_verdict(erf_saturation_case(), fake_runner)
    case.recipe = case.recipe.with_knob(backend="eager")  # "fixed": compiled now matches
    with pytest.raises(NotReproducible, match="does not reproduce: 0/3"):
        minimize(case, fake_runner)


def test_repro_file_reproduces_in_a_subprocess(fake_runner, tmp_path):
    case = with_verdict(erf_saturation_case(), fake_runner)
    result = minimized(case, fake_runner, tmp_path)
    repro = write_repro(result.case, tmp_path / "min")
    text = repro.read_text()
    assert "def model(x0):" in text and "torch.erf(x0)" in text
    done = run_repro(repro)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DIVERGES" in done.stdout
    # The same file with the divergence gone exits 0: it can drive compiler_bisector.
    fixed = repro.read_text().replace("erf_quarter as BACKEND", "inject_inf as BACKEND")
    (tmp_path / "fixed.py").write_text(fixed)
    assert run_repro(tmp_path / "fixed.py").returncode == 0


def test_large_inputs_go_to_an_adjacent_file(fake_runner, tmp_path):
    case = with_verdict(erf_saturation_case(), fake_runner)
    repro = write_repro(case, tmp_path)
    assert (tmp_path / "inputs.pt").exists()
    done = run_repro(repro)
    assert done.returncode == 1, done.stdout + done.stderr


def test_minimize_cli_rejects_a_case_without_divergence(tmp_path):
    case = erf_saturation_case()
    case.save(tmp_path / "plain.pt")
    done = python("-m", "fuzzer", "minimize", tmp_path / "plain.pt", cwd=REPO, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no divergence" in done.stderr


def test_minimize_cli_exits_3_when_the_case_does_not_reproduce_k_of_k(tmp_path):
    case = erf_saturation_case(backend="tests.fakes:flaky")
    case.graph.outputs = [case.graph.outputs[0]]
    case.graph.remove_dead()
    from fuzzer.judge.verdict import Verdict

    case.verdict = Verdict("int-flip", 0, case.graph.outputs[0])
    case.save(tmp_path / "flaky.pt")
    done = python("-m", "fuzzer", "--trust-backend", "tests.fakes:flaky", "minimize",
                  tmp_path / "flaky.pt", "-o", tmp_path / "out", cwd=REPO, timeout=300)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "flaky" in done.stderr
    assert not (tmp_path / "out").exists()


def test_candidates_with_shared_arguments_compile_afresh() -> None:
    """A candidate whose caller passes a view of an input beside it runs with the compile
    caches off (its cache key ignores where the shared arguments sit in their storage, RESULTS
    §23 D); any other candidate runs as the campaign did."""
    from fuzzer.judge.kinds import Kind
    from fuzzer.judge.verdict import Verdict

    seen: list[dict] = []

    class Recording:
        def run(self, task, timeout=None):
            seen.append(dict(task.recipe.config))
            return type("Result", (), {"verdict": Verdict(Kind.OK)})()

    def program(passed: bool) -> Case:
        b = Builder(random.Random(0), "float32")
        x = b.input((4, 5))
        window = b.op("slice", x, index=((1, None, None),), passed=passed)
        b.op("mul_scalar_", x, value=2.0)
        b.graph.outputs = [b.op("exp", b.current(window))]
        b.graph.infer()
        return Case(graph=b.graph, inputs={str(x): torch.ones(4, 5)}, recipe=Recipe("inductor"))

    oracle = Oracle(Verdict(Kind.ACCURACY, 0), Recording())
    oracle(program(passed=True))
    oracle(program(passed=False))
    assert seen[0].get("force_disable_caches") is True
    assert "force_disable_caches" not in seen[1]


def test_a_repros_constants_are_one_spec_written_and_read_by_the_same_names() -> None:
    """``ReproSpec`` is every constant a repro.py holds; ``repro_main`` reads them under the
    names its placeholders give: the two lists are one."""
    import ast
    import dataclasses
    import inspect

    from fuzzer.reduce import repro_main
    from fuzzer.reduce.repro import ReproSpec

    head = inspect.getsource(repro_main).split("\nEMBEDDED = ", 1)[0]
    placeholders = set()
    for node in ast.parse(head).body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            placeholders |= {n.id for n in names if isinstance(n, ast.Name) and n.id.isupper()}
    written_elsewhere = {"SELECTOR", "BOUNDARY", "BOUNDARIES", "HOOK", "BACKEND_NAME"}
    spec = {f.name for f in dataclasses.fields(ReproSpec)} - {"DEVICE"}  # get_inputs reads it
    assert placeholders - written_elsewhere == spec

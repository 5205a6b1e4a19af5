"""The surface catalogue (issue 50): every surface round-trips case file -> replay -> repro.py and
the plain snippet; automatic dynamic calls at another batch size first; the promises a torch
makes exactly (numerics="strict", batch_invariant) are judged bit for bit; triage says which
option of its surface a divergence needs. Planted through fake backends."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from fuzzer.corpus.case import Case
from fuzzer.corpus.replay import replay_case
from fuzzer.errors import CaseError
from fuzzer.execute import surface
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import Task
from fuzzer.gen.grammar import Builder
from fuzzer.ir.graph import Graph
from fuzzer.judge.kinds import Kind
from fuzzer.reduce.repro import repro_source, write_repro
from fuzzer.reduce.snippet import snippet_source
from fuzzer.triage.signature import signature_fields
from tests import triage_fakes as tf
from tests.conftest import run_repro


def elementwise(op: str = "add", rows: int = 4) -> tuple[Graph, dict[str, torch.Tensor]]:
    """``x op y`` over a batch of ``rows`` rows: each row computed from its own row."""
    b = Builder(random.Random(0), "float32")
    x, y = b.input((rows, 8)), b.input((rows, 8))
    b.graph.outputs = [b.op(op, x, y) if op in ("add", "mul") else b.op(op, x)]
    gen = torch.Generator().manual_seed(0)
    return b.graph, {str(x): torch.randn(rows, 8, generator=gen),
                     str(y): torch.randn(rows, 8, generator=gen)}


def judged(graph: Graph, inputs: dict, recipe: Recipe, runner) -> Case:
    verdict = runner.run(Task(graph=graph, draws=[inputs], recipe=recipe)).verdict
    return Case(graph=graph, inputs=inputs, recipe=recipe, verdict=verdict)


@pytest.mark.parametrize("name", list(surface.CATALOGUE))
def test_every_surface_round_trips_its_case_file_repro_and_snippet(name: str,
                                                                   tmp_path: Path) -> None:
    entry = surface.CATALOGUE[name]
    graph, inputs = elementwise()
    recipe = Recipe().on(entry)
    case = Case(graph=graph, inputs=inputs, recipe=recipe, verdict=None,
                device="cuda" if entry.devices == ("cuda",) else "cpu")
    back = Case.load(case.save(tmp_path / "case.pt"))
    assert back.recipe == recipe and back.recipe.surface.name == name
    assert back.digest() == case.digest()
    snippet = snippet_source(back, {n: "torch.ones(4, 8)" for n in ("x0", "x1")})
    for key, value in entry.options.items():
        assert f"torch._inductor.config.{key} = {value!r}" in snippet
    if entry.surface.mode != "default":
        assert f"mode={entry.surface.mode!r}" in snippet
    back.verdict = back.verdict or _verdict(graph)
    source = repro_source(back, tmp_path)
    assert f"COMPILE = {entry.surface.compile_kwargs()!r}" in source
    assert f"PROMISE = {entry.surface.promise!r}" in source
    assert ("GROWN = None" in source) == (not entry.surface.automatic and
                                          entry.surface.promise != "batch-invariant")


def _verdict(graph: Graph):
    from fuzzer.judge.verdict import Verdict

    return Verdict(Kind.ACCURACY, 0, graph.outputs[0])


@pytest.mark.parametrize("data,words", [({"name": "nowhere"}, "surface name"),
                                        ({"promise": "always"}, "surface promise"),
                                        ({"automatic": 1}, "true or false"),
                                        ({"dynamic": True, "automatic": True}, "exclude")])
def test_a_surface_from_a_file_names_only_what_the_catalogue_has(data, words) -> None:
    with pytest.raises(CaseError, match=words):
        surface.Surface.from_dict(data)


def test_what_runs_here_is_detected_not_assumed() -> None:
    entries, why = surface.available("cpu", "tests.fakes:inject_inf")
    assert {e.name for e in entries} == {"default", "dynamic", "automatic-dynamic", "training"}
    assert "CUDA" in why["reduce-overhead"].upper() and "Inductor's" in why["freezing"]
    cuda, _ = surface.available("cuda", "inductor")
    assert {"reduce-overhead", "triton-templates"} <= {e.name for e in cuda}


def test_automatic_dynamic_calls_at_another_batch_size_first(fake_runner, tmp_path) -> None:
    """nan_when_dynamic is wrong only in a kernel compiled over symbolic sizes: the static
    surface never shows it, automatic dynamic's recompile does; replay and repro.py too."""
    graph, inputs = elementwise("exp")
    static = judged(graph, inputs, Recipe("tests.fakes:nan_when_dynamic"), fake_runner)
    assert static.verdict.kind == Kind.OK, static.verdict.summary()
    auto = Recipe("tests.fakes:nan_when_dynamic").on(surface.CATALOGUE["automatic-dynamic"])
    case = judged(graph, inputs, auto, fake_runner)
    assert case.verdict.kind == Kind.NONFINITE, case.verdict.summary()
    back = Case.load(case.save(tmp_path / "case.pt"))
    assert replay_case(back).verdict.kind == Kind.NONFINITE
    done = run_repro(write_repro(back, tmp_path / "repro"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "torch.cat([x0, x0[:1]])" in snippet_source(back, {"x0": "x0", "x1": "x1"})


def test_a_program_that_takes_no_other_batch_size_is_a_skip_on_automatic_dynamic(
        fake_runner) -> None:
    b = Builder(random.Random(0), "float32")
    x = b.input((4, 8))
    w = b.input((4, 8), role="w")
    b.graph.outputs = [b.op("add", x, w)]  # the weight has the batch's length: no other
    inputs = {str(x): torch.ones(4, 8), str(w): torch.ones(4, 8)}
    auto = Recipe("tests.fakes:nan_when_dynamic").on(surface.CATALOGUE["automatic-dynamic"])
    verdict = fake_runner.run(Task(graph=b.graph, draws=[inputs], recipe=auto)).verdict
    assert verdict.kind == Kind.SKIP and "no other batch size" in verdict.message


def promised(promise: str, backend: str) -> Recipe:
    return Recipe(backend, surface=surface.Surface(promise=promise))


def test_strict_numerics_promises_eager_bits_where_it_covers_the_ops(fake_runner,
                                                                     tmp_path) -> None:
    graph, inputs = elementwise("add")
    strict = promised("strict", "tests.fakes:float_outputs_one_ulp_up")
    case = judged(graph, inputs, strict, fake_runner)
    assert case.verdict.kind == Kind.PROMISE and "strict" in case.verdict.message
    done = run_repro(write_repro(case, tmp_path / "repro"))
    assert done.returncode == 1 and "DIVERGES" in done.stdout, done.stdout + done.stderr
    # one ulp of exp is within every tolerance, and strict promises nothing for exp
    graph, inputs = elementwise("exp")
    assert judged(graph, inputs, strict, fake_runner).verdict.kind != Kind.PROMISE
    # nor does the default surface promise bits
    graph, inputs = elementwise("add")
    plain = Recipe("tests.fakes:float_outputs_one_ulp_up")
    assert not judged(graph, inputs, plain, fake_runner).verdict.is_finding


def test_batch_invariance_holds_a_row_to_the_same_row_computed_alone(fake_runner,
                                                                     tmp_path) -> None:
    graph, inputs = elementwise("mul")
    invariant = promised("batch-invariant", "tests.fakes:rows_depend_on_batch")
    case = judged(graph, inputs, invariant, fake_runner)
    assert case.verdict.kind == Kind.PROMISE and "rows [0]" in case.verdict.message
    done = run_repro(write_repro(case, tmp_path / "repro"))
    assert done.returncode == 1 and "DIVERGES" in done.stdout, done.stdout + done.stderr
    # a program that mixes rows (a sum over the batch) promises nothing about rows alone
    b = Builder(random.Random(0), "float32")
    x = b.input((4, 8))
    b.graph.outputs = [b.op("sum", x, dim=0)]
    mixed = judged(b.graph, {str(x): torch.randn(4, 8)}, invariant, fake_runner)
    assert mixed.verdict.kind != Kind.PROMISE, mixed.verdict.summary()


def test_triage_says_which_option_of_its_surface_a_divergence_needs(fake_runner) -> None:
    graph, inputs = elementwise("exp")
    freezing = Recipe("tests.fakes:inf_when_freezing").on(surface.CATALOGUE["freezing"])
    case = judged(graph, inputs, freezing, fake_runner)
    assert case.verdict.kind == Kind.NONFINITE
    attribution = tf.attributed(case, fake_runner)
    assert attribution.needs() == ["freezing=True"], attribution.to_dict()
    assert signature_fields(case, attribution)["needs"] == ["freezing=True"]
    plain = replace(case, recipe=Recipe("tests.fakes:inject_inf"))
    assert "needs" not in signature_fields(plain, tf.attributed(plain, fake_runner))

"""Programs with state: views that alias their base, writes through them, reads of old aliases,
and a verdict on the state the call leaves behind. The IR's versions and statement order, the
judged state, and fake backends that plant a wrong mutation, a lost alias, a wrong buffer
update and a stray write."""

from __future__ import annotations

import random

import pytest
import torch

from fuzzer.corpus.case import Case, CaseError
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import Task
from fuzzer.gen import edge, inputs
from fuzzer.gen.grammar import Builder
from fuzzer.ir import ops, render
from fuzzer.ir.graph import Graph
from fuzzer.judge import semantics
from fuzzer.judge.kinds import Kind
from tests.conftest import skip_on_this_torch


def _shift_then_add() -> Graph:
    """``x[1:] = x[:-1].clone(); x.add_(y); return x.t() * 2, x.sum(0)``: a write of a clone of
    the same storage (overlapping), then an in-place add, then reads of the written input."""
    b = Builder(random.Random(0), "float32")
    x = b.input((6, 5))
    src = b.op("clone", b.op("slice", x, index=((None, -1, None),)))
    shifted = b.op("setitem", x, src, index=((1, None, None),))
    added = b.op("add_", shifted, b.input((6, 5)))
    b.graph.outputs = [b.op("mul_scalar", b.op("t", added), value=2.0),
                       b.op("sum", added, dim=0)]
    b.graph.infer()
    return b.graph


def test_writes_render_as_statements_in_version_order() -> None:
    graph = _shift_then_add()
    source = render.render_model(graph)
    lines = [ln.strip() for ln in source.splitlines() if ln.startswith("    ")]
    assert lines[:4] == ["v1 = x0[:-1]", "v2 = v1.clone()", "x0[1:] = v2", "x0.add_(x4)"]
    assert graph.written_inputs() == [0]
    again = Graph.from_dict(graph.to_dict())
    assert render.render_model(again) == source and again.digest() == graph.digest()


def test_a_read_of_a_replaced_version_is_an_invalid_graph() -> None:
    """``v = x * 2`` after ``x.add_(1)`` must read through the write (or a reread of it):
    a node reading ``x`` as it was while depending on the write is no program at all."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    write = b.op("add_scalar_", x, value=1.0)
    b.graph.add("add", [x, write])  # reads the old x and the new one: no order makes it so
    with pytest.raises(ops.InvalidGraph, match="reads node 0 as it was before write"):
        b.graph.infer()


def test_the_probes_that_infer_a_node_warn_nobody(recwarn) -> None:
    """``torch.add(a, b, out=c)`` with a smaller ``c`` resizes it in eager (a deprecation
    warning): the graph is invalid, and the meta probe that finds it out warns nobody; nor does
    the probe of a valid op that warns when it runs."""
    b = Builder(random.Random(0), "float32")
    a, small = b.input((3, 5)), b.input((1, 5))
    with pytest.raises(ops.InvalidGraph, match="does not have its target's shape"):
        b.graph.add("add_out", [a, a, small])
    one = b.input((3, 1))  # a std over one element: NaN, and torch warns of it (the program's
    std = b.op("std_c", one, dims=(1,), correction=1, keepdim=True)  # business, not the probe's)
    assert edge.runs_eagerly(b.graph, std)  # eager's kernel probed on zeros
    assert not [str(w.message) for w in recwarn]


def test_a_read_before_a_write_is_ordered_before_it_whatever_its_id() -> None:
    """Statement order follows versions, not ids: a later-added read of the old value still
    runs before the write that replaces it."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    view = b.op("slice", x, index=((1, None, None),))
    write = b.op("fill_", view, value=0.0)
    old = b.graph.add("mul_scalar", [x], value=3.0)  # reads x as it was: before the fill_
    b.graph.outputs = [old, b.current(x)]
    b.graph.infer()
    order = b.graph.order()
    assert order.index(old) < order.index(write)
    lines = [ln.strip() for ln in render.render_model(b.graph).splitlines()]
    assert lines.index("v3 = x0 * 3.0") < lines.index("v1.fill_(0.0)")
    assert "return (v3, x0)" in lines  # the reread renders as the old alias's name


def test_writes_to_an_input_survive_dead_code_removal() -> None:
    b = Builder(random.Random(0), "float32")
    x, y = b.input((4,)), b.input((2,))
    b.op("mul_", b.op("slice", x, index=((0, 2, None),)), b.op("exp", y))
    b.graph.outputs = [b.op("sigmoid", y)]
    b.graph.remove_dead()
    b.graph.infer()
    assert {"mul_", "exp", "slice"} <= set(b.graph.op_names())
    assert b.graph.written_inputs() == [x]


def _state_task(backend: str) -> Task:
    graph = _shift_then_add()
    _, draw = inputs.draws(graph, 0, 1)[0]
    return Task(graph=graph, draws=[draw], recipe=Recipe(backend), keep_outputs=True)


def test_a_clean_backend_judges_outputs_and_state(fake_runner) -> None:
    result = fake_runner.run(_state_task("eager"))
    assert result.verdict.kind == Kind.OK, result.verdict.summary()
    states = [o for o in result.verdict.outputs if o.details.state_of == 0]
    assert len(states) == 1 and len(result.verdict.outputs) == 3


@pytest.mark.parametrize("backend, place", [
    ("tests.fakes:drop_input_writes", "the state of input node 0 after the call"),
    ("tests.fakes:overshoot_input_writes", "the state of input node 0 after the call"),
])
def test_a_wrong_write_to_an_input_is_a_finding_on_its_state(fake_runner, backend, place):
    verdict = fake_runner.run(_state_task(backend)).verdict
    assert verdict.is_finding and verdict.place == place, verdict.summary()
    assert verdict.diverging.details.state_of == 0


def test_a_stray_write_is_an_aliasing_finding(fake_runner) -> None:
    verdict = fake_runner.run(_state_task("tests.fakes:stray_input_write")).verdict
    assert verdict.kind == Kind.ALIASING, verdict.summary()
    assert "compiled changed x4, which the program never writes" in verdict.summary()


def test_a_lost_alias_is_an_aliasing_finding(fake_runner) -> None:
    """The program returns a view of its input; compiled returns a copy."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4, 3))
    b.op("relu_", x)
    b.graph.outputs = [b.op("t", b.current(x))]
    b.graph.infer()
    _, draw = inputs.draws(b.graph, 0, 1)[0]
    task = Task(graph=b.graph, draws=[draw], keep_outputs=True)
    assert fake_runner.run(Task(**{**task.__dict__, "recipe": Recipe("eager")})).verdict.kind \
        == Kind.OK
    verdict = fake_runner.run(Task(**{**task.__dict__,
                                      "recipe": Recipe("tests.fakes:detach_outputs")})).verdict
    assert verdict.kind == Kind.ALIASING, verdict.summary()
    assert "shares storage with x0 in eager, with no input compiled" in verdict.summary()


@pytest.mark.inductor
def test_real_inductor_judges_a_stateful_program(inductor_runner) -> None:
    result = inductor_runner.run(_state_task("inductor"))
    assert result.verdict.kind in (Kind.OK, Kind.BENIGN), result.verdict.summary()
    assert any(o.details.state_of == 0 for o in result.verdict.outputs)


def test_a_stateful_finding_minimizes_to_a_repro_and_a_plain_snippet(fake_runner, tmp_path):
    """A planted wrong write, minimized: its repro.py (run by ``minimized``) and its plain
    snippet both show the state of the written input after the call."""
    from fuzzer.corpus.case import Case
    from fuzzer.reduce.snippet import plain_repro
    from tests.conftest import minimized, run_repro

    task = _state_task("tests.fakes:overshoot_input_writes")
    verdict = fake_runner.run(task).verdict
    case = Case(graph=task.graph, inputs=task.draws[0], recipe=task.recipe, verdict=verdict)
    result = minimized(case, fake_runner, tmp_path)
    assert result.reliability[0] == result.reliability[1]
    small = result.case
    assert small.verdict.diverging.details.state_of is not None
    repro = (tmp_path / "repro" / "repro.py").read_text()
    assert "after the call" in repro and "WRITTEN = [" in repro
    plain = plain_repro(small, fake_runner, tmp_path, "plain")
    (tmp_path / "plain.py").write_text(plain.source)
    assert "def call(fn, *xs)" in plain.source
    done = run_repro(tmp_path / "plain.py", cwd=tmp_path)
    assert done.returncode == 0 and "eager" in done.stdout, done.stdout + done.stderr
    assert len(plain.source.splitlines()) < 25, plain.source


def _write_beside_a_passed_window() -> Graph:
    """``forward(x0, v1)`` called as ``forward(x0, x0[1:, 2:])``: it writes ``x0`` and reads
    the window, whose rows and columns both start at an offset."""
    b = Builder(random.Random(0), "float32")
    x = b.input((7, 9))
    window = b.op("slice", x, index=((1, None, None), (2, None, None)), passed=True)
    b.op("add_scalar_", x, value=1.0)
    b.graph.outputs = [b.op("sum", b.current(window), dim=0)]
    b.graph.infer()
    return b.graph


def test_a_passed_view_is_an_argument_of_its_own() -> None:
    """The caller makes the view and passes it beside its base: the compiled function is
    ``forward``, which receives both (``calling.compile_model``). A ``passed`` mark on a view
    that is not read straight off an input renders as an ordinary view."""
    graph = _write_beside_a_passed_window()
    source = render.render_model(graph)
    assert "def forward(x0, v1):" in source
    assert "return forward(x0, x0[1:, 2:])" in source
    assert "v1 = " not in source  # the caller made it
    trace = render.load(render.render_trace(graph), "trace")
    import torch
    x = torch.arange(63.0).reshape(7, 9)
    model = render.load(source, "model")
    assert torch.equal(model(x.clone())[0], trace(x.clone())[graph.outputs[0]])
    assert torch.equal(model(x.clone())[0], (x + 1)[1:, 2:].sum(0, keepdim=True))
    b = Builder(random.Random(0), "float32")
    inner = b.op("exp", b.input((4, 3)))
    b.graph.outputs = [b.op("slice", inner, index=((1, None, None),), passed=True)]
    b.graph.infer()
    assert not b.graph.passed_views() and "def forward" not in render.render_model(b.graph)


def test_arguments_that_lose_their_overlap_are_a_finding(fake_runner) -> None:
    """A write to ``x0`` must show through the window passed beside it; a backend that runs on
    a copy of each argument loses that, and the window's sum is judged wrong. The same program
    under Dynamo alone (backend ``eager``) is clean."""
    graph = _write_beside_a_passed_window()
    _, draw = inputs.draws(graph, 0, 1)[0]
    task = Task(graph=graph, draws=[draw], recipe=Recipe("eager"), keep_outputs=True)
    assert fake_runner.run(task).verdict.kind == Kind.OK
    lost = fake_runner.run(Task(**{**task.__dict__,
                                   "recipe": Recipe("tests.fakes:separate_arguments")}))
    assert lost.verdict.is_finding and lost.verdict.output == 0, lost.verdict.summary()


def test_a_write_through_the_bits_as_integers_is_judged_by_eager_parity(fake_runner,
                                                                       tmp_path) -> None:
    """``x.view(torch.int32).add_(1 << 23)`` (the exponent's lowest bit: each value doubles)
    then ``x * 2``: float64 has other bits, so the program
    is judged against eager, and says so; a backend that loses the input's writes is found on
    the state the call leaves. The state strategy draws such views and integer writes."""
    from fuzzer.gen.strategy import _stateful

    b = Builder(random.Random(0), "float32")
    x = b.input((4, 6))
    b.op("add_scalar_", b.op("view_dtype", x, to="int32"), value=1 << 23)
    b.graph.outputs = [b.op("mul_scalar", b.current(x), value=2.0)]
    b.graph.infer()
    _, draw = inputs.draws(b.graph, 0, 1)[0]
    task = Task(graph=b.graph, draws=[draw], recipe=Recipe("eager"), keep_outputs=True)
    clean = fake_runner.run(task).verdict
    assert clean.kind == Kind.OK, clean.summary()
    assert all("eager's values" in (o.details.judged_by or "") for o in clean.outputs)
    lost = fake_runner.run(Task(**{**task.__dict__,
                                   "recipe": Recipe("tests.fakes:drop_input_writes")})).verdict
    assert lost.is_finding and lost.diverging.details.state_of == x, lost.summary()
    _repro_and_snippet_judge_by_eager(Case(graph=b.graph, inputs=draw, verdict=lost,
                                           recipe=Recipe("tests.fakes:drop_input_writes")),
                                      fake_runner, tmp_path)
    drawn = [g for g in (_stateful(seed, "float32") for seed in range(200))
             if "view_dtype" in g.op_names()]
    assert drawn and any(
        ops.spec(g.node(n).op).category == "write" and g.node(n).dtype.startswith("int")
        and g.node(g.root(n)).dtype.startswith("float") for g in drawn for n in g.op_ids())


def _bits_of_erf(write: str, value: int) -> Task:
    """``y = torch.erf(x)`` in bfloat16, then ``y.view(torch.int16).<write>(value)``; judged
    on ``y``. The view reinterprets a computed float: one step of rounding noise there moves
    ``mul_scalar_(-3)``'s result by far more than any tolerance, ``add_scalar_(1)``'s by a step."""
    b = Builder(random.Random(0), "bfloat16")
    y = b.op("erf", b.input((4, 6)))
    b.op(write, b.op("view_dtype", y, to="int16"), value=value)
    b.graph.outputs = [b.op("mul_scalar", b.current(y), value=2.0)]
    b.graph.infer()
    _, draw = inputs.draws(b.graph, 0, 1)[0]
    return Task(graph=b.graph, draws=[draw], recipe=Recipe("eager"))


def test_rounding_noise_amplified_by_a_dtype_view_is_no_evidence(fake_runner, tmp_path):
    """Under eager parity, a compiled erf one step off (noise a fused kernel or another order
    of accumulation makes) is amplified by ``view(int16).mul_(-3)`` into a huge difference: the
    elements one step of noise moves there are not judged, and are counted (a GPU state case,
    a bfloat16 scatter_add_ in another order, was an accuracy finding so, RESULTS §4). Where
    the view does not amplify (``add_(1)``), a compiled erf a quarter of eager's is still found."""
    def run(task, backend):
        return fake_runner.run(Task(**{**task.__dict__, "recipe": Recipe(backend)})).verdict

    amplified = _bits_of_erf("mul_scalar_", -3)
    noise = run(amplified, "tests.fakes:erf_ulp")
    assert noise.kind == Kind.OK, noise.summary()
    assert sum(o.details.unstable or 0 for o in noise.outputs) > 0
    plain = _bits_of_erf("add_scalar_", 1)
    assert run(plain, "tests.fakes:erf_ulp").kind == Kind.OK
    bug = run(plain, "tests.fakes:erf_quarter")
    assert bug.is_finding and "eager's values" in (bug.diverging.details.judged_by or ""), \
        bug.summary()
    from fuzzer.reduce.repro import write_repro
    from tests.conftest import run_repro

    case = Case(graph=plain.graph, inputs=plain.draws[0], dtype="bfloat16", verdict=bug,
                recipe=Recipe("tests.fakes:erf_quarter"))
    repro = write_repro(case, tmp_path / "repro")
    assert f"BIT_NOISE = {plain.graph.outputs[0]!r}" in repro.read_text()
    done = run_repro(repro)  # the same rule in the repro: the bug reproduces
    assert done.returncode == 1, done.stdout + done.stderr


def _erf_compared_beside_bits(policy: str = "float64") -> Task:
    """``torch.erf(x) > 0.5`` in float32 beside ``w.view(torch.int32).add_(1)``, which makes
    float64 unable to stand for the program: judged against eager. ``x`` holds the one float32
    whose erf is exactly 0.5 (a compiled erf one ulp up flips its comparison, 0 ulps from the
    boundary) and values far from it."""
    b = Builder(random.Random(0), "float32")
    x, w = b.input((4, 6)), b.input((4, 6))
    b.op("add_scalar_", b.op("view_dtype", w, to="int32"), value=1)
    b.graph.outputs = [b.op("gt_scalar", b.op("erf", x), value=0.5)]
    b.graph.infer()
    _, draw = inputs.draws(b.graph, 0, 1)[0]
    values = torch.linspace(-2.0, 2.0, 24).reshape(4, 6)
    values[0, 0] = 0.4769362807273865  # float32 erf of it is 0.5 exactly
    draw = {**draw, str(x): values}
    return Task(graph=b.graph, draws=[draw], recipe=Recipe("eager", policy=policy))


def test_a_flip_on_its_boundary_judged_against_eager_is_weak(fake_runner) -> None:
    """Judged against eager (float64 cannot stand: a dtype view), eager's error against itself
    is zero, so a flip one ulp from its boundary once read as strong evidence (or, forced to
    the parity policy, as a ``parity`` finding: a CPU state campaign saved an int8 code 0.2
    ulps from its boundary so, RESULTS §4). Eager's noise has a floor there: such a flip is a
    weak flip, not a finding; under ``--policy parity`` it is one; a compiled erf a quarter of
    eager's is an int-flip by either rule."""
    def run(task, backend):
        recipe = Recipe(backend, policy=task.recipe.policy)
        return fake_runner.run(Task(**{**task.__dict__, "recipe": recipe})).verdict

    task = _erf_compared_beside_bits()
    assert not semantics.float64_stands(task.graph)
    assert run(task, "eager").kind == Kind.OK
    noise = run(task, "tests.fakes:erf_ulp")
    assert noise.kind == Kind.WEAK_FLIP and not noise.is_finding, noise.summary()
    assert "eager's values" in (noise.outputs[0].details.judged_by or ""), noise.summary()
    asked = run(_erf_compared_beside_bits("parity"), "tests.fakes:erf_ulp")
    assert asked.kind == Kind.PARITY and asked.is_finding, asked.summary()
    bug = run(task, "tests.fakes:erf_quarter")
    assert bug.kind == Kind.INT_FLIP, bug.summary()
    # float64 never ran: nothing says where it sided, and the draft says what stood for it
    from fuzzer.report.draft import describe

    assert bug.diverging.details.reference == "eager" and "sides" not in bug.summary()
    drafted = describe(Case(graph=task.graph, inputs=task.draws[0], verdict=bug,
                            recipe=Recipe("tests.fakes:erf_quarter")))
    assert "judged against eager's own values" in drafted and "sides with" not in drafted
    assert "a float64 baseline" not in drafted, drafted


def test_an_integer_flip_through_a_dtype_view_reproduces_from_its_repro(fake_runner, tmp_path):
    """``x.view(torch.int32).index_add_(1, i, v)``'s integer result, one off compiled: the runner
    judges it by eager parity with no float64 run, so no nudged float64 runs either. repro.py
    once ran them anyway; on a dtype view they fail, which reads "no flip is strong", and a
    strong int-flip numfuzz saw (a CPU state campaign's, RESULTS §4) exited 0 there."""
    from fuzzer.reduce.repro import write_repro
    from tests.conftest import run_repro

    b = Builder(random.Random(0), "float32")
    x = b.input((1, 12))
    index = b.input((1,), role="index", dtype="int64", bound=12)
    source = b.input((1, 1), dtype="int32")
    added = b.op("index_add_", b.op("view_dtype", x, to="int32"), index, source, dim=1)
    b.graph.outputs = [b.op("clone", added)]
    b.graph.infer()
    _, draw = inputs.draws(b.graph, 0, 1)[0]
    recipe = Recipe("tests.fakes:off_by_one_on_int")
    verdict = fake_runner.run(Task(graph=b.graph, draws=[draw], recipe=recipe)).verdict
    assert verdict.is_finding and verdict.output == 0, verdict.summary()
    repro = write_repro(Case(graph=b.graph, inputs=draw, verdict=verdict, recipe=recipe),
                        tmp_path / "repro")
    assert "NUDGED = False" in repro.read_text()
    done = run_repro(repro)
    assert done.returncode == 1, done.stdout + done.stderr


def test_the_repro_of_an_index_output_beside_a_strided_dtype_view_is_written(fake_runner,
                                                                             tmp_path) -> None:
    """``x[:, ::2].view(torch.int16)`` is a view in float16 but not in float64 (other element
    sizes need stride 1). Writing the repro of a crash with an ``argmax`` output ran a float64
    trace to learn how that index is judged, and failed on such a view: "numfuzz could not
    render repro.py", for a CppCompileError a 45-minute night found (RESULTS §24)."""
    from fuzzer.reduce.repro import write_repro

    b = Builder(random.Random(0), "float16")
    x = b.input((4, 8))
    strided = b.op("slice", x, index=((None, None, None), (None, None, 2)))
    b.op("add_scalar_", b.op("view_dtype", strided, to="int16"), value=1)
    b.graph.outputs = [b.op("argmax", b.current(x), dim=1, keepdim=False)]
    b.graph.infer()
    _, draw = inputs.draws(b.graph, 0, 1)[0]
    recipe = Recipe("tests.fakes:raises")
    verdict = fake_runner.run(Task(graph=b.graph, draws=[draw], recipe=recipe)).verdict
    assert verdict.kind == Kind.CRASH, verdict.summary()
    repro = write_repro(Case(graph=b.graph, inputs=draw, dtype="float16", verdict=verdict,
                             recipe=recipe), tmp_path / "repro")
    assert "SELECT = {" in repro.read_text()


def _repro_and_snippet_judge_by_eager(case, runner, tmp_path) -> None:
    """The repro.py and the plain snippet of a finding on a program that reinterprets bits run,
    and compare with eager, not float64 (widened, its bits are other bits and its dtype views
    other shapes: writing the repro of a GPU run's case raised on that, RESULTS §4)."""
    from fuzzer.reduce.repro import write_repro
    from fuzzer.reduce.snippet import plain_repro
    from tests.conftest import run_repro

    repro = write_repro(case, tmp_path / "parity")
    assert "FLOAT64 = False" in repro.read_text() and "FLOOR = 1.0" in repro.read_text()
    done = run_repro(repro)
    assert done.returncode == 1, done.stdout + done.stderr
    plain = plain_repro(case, runner, tmp_path, "plain").source
    assert "float64)" not in plain and "judged against eager" in plain, plain
    (tmp_path / "plain.py").write_text(plain)
    shown = run_repro(tmp_path / "plain.py", cwd=tmp_path)
    assert shown.returncode == 0 and "compiled" in shown.stdout, shown.stdout + shown.stderr


def test_outputs_sharing_one_storage_under_two_dtypes_reach_the_table(fake_runner) -> None:
    """A program returning ``x.view(torch.int32)`` after a write through it, while the state of
    ``x`` is judged too: two values of one storage under two dtypes. Replayed with its values
    (a replay table, the minimizer), ``torch.save`` refused them and the worker died, which read
    as the compiled program's crash (a CUDA state case replayed on the CPU, RESULTS §4)."""
    b = Builder(random.Random(0), "float32")
    x = b.input((4, 6))
    b.graph.outputs = [b.op("add_scalar_", b.op("view_dtype", x, to="int32"), value=1 << 23)]
    b.graph.infer()
    _, draw = inputs.draws(b.graph, 0, 1)[0]
    result = fake_runner.run(Task(graph=b.graph, draws=[draw], recipe=Recipe("eager"),
                                  keep_outputs=True))
    assert result.verdict.kind == Kind.OK, result.verdict.summary()
    eager = result.outputs["eager"]
    assert [t.dtype for t in eager] == [torch.int32, torch.float32]
    assert torch.equal(eager[0], eager[1].view(torch.int32))  # the same bits, stored apart


def _module_task(backend: str, config: dict | None = None) -> Task:
    """A conv, eval batch norm and relu whose weights are parameters, then a training-mode
    batch norm whose running statistics are buffers it updates: a module with state."""
    from fuzzer.gen import grammar

    b = Builder(random.Random(0), "float32")
    y = b.conv(b.input((2, 3, 6, 6)), 4, 3)
    y = b.op("batch_norm", y, *[b.input((4,), r) for r in ("mean", "var", "gamma", "beta")],
             eps=1e-5)
    stats = [b.input((4,), r) for r in ("mean", "var", "gamma", "beta")]
    b.graph.outputs = [b.op("batch_norm_train", b.op("relu", y), *stats, momentum=0.1,
                            eps=1e-5)]
    grammar.as_module(b.graph)
    b.graph.infer()
    _, draw = inputs.draws(b.graph, 0, 1)[0]
    return Task(graph=b.graph, draws=[draw], recipe=Recipe(backend, config=config or {}),
                keep_outputs=True)


def test_a_module_runs_with_its_parameters_and_buffers(fake_runner) -> None:
    task = _module_task("eager")
    kinds = [task.graph.node(n).attrs.get("state") for n in task.graph.input_ids()]
    assert kinds.count("param") == 6 and kinds.count("buffer") == 4
    assert "class" not in render.render_model(task.graph)  # one body; the module wraps it
    verdict = fake_runner.run(task).verdict
    assert verdict.kind == Kind.OK, verdict.summary()
    assert sorted(o.details.state_of for o in verdict.outputs
                  if o.details.state_of is not None) \
        == sorted(task.graph.written_inputs())  # the running statistics, judged
    lost = fake_runner.run(_module_task("tests.fakes:drop_input_writes")).verdict
    assert lost.is_finding and "state of input node" in lost.place, lost.summary()


@pytest.mark.inductor
def test_freezing_folds_a_modules_parameters(inductor_runner) -> None:
    """Under ``freezing=true`` the case's verdict counts the constants Inductor made of the
    module's parameters; without it nothing is counted."""
    frozen = inductor_runner.run(_module_task("inductor", {"freezing": True})).verdict
    assert frozen.frozen is not None and frozen.frozen > 0, frozen
    assert not frozen.is_finding, frozen.summary()
    assert inductor_runner.run(_module_task("inductor")).verdict.frozen is None


@pytest.mark.inductor
def test_a_real_stateful_finding_replays(inductor_runner, tmp_path) -> None:
    """A real aliasing bug numfuzz's ``state`` strategy found and minimized (torch 2.13 and
    2.15, CPU): after ``x.diagonal()[3:] = y``, the compiled program returns ``x.clone()`` as
    ``x`` itself, so a later write to either changes the other (upstream #195451, open: the
    scatter copy-back into the input changes the output's aliasing). Replayed: still that
    finding, and its repro says so."""
    from pathlib import Path

    from fuzzer.corpus.case import Case
    from fuzzer.reduce.repro import write_repro
    from tests.conftest import run_repro

    case = Case.load(Path(__file__).parent / "data" / "aliasing_setitem_diagonal_clone.pt")
    assert [ln.strip() for ln in render.render_model(case.graph).splitlines()[5:9]] == [
        "v1 = x0.diagonal(0, 0, 1)", "v1[3:] = x2", "v5 = x0.clone()", "return (v5,)"]
    verdict = inductor_runner.run(case.task()).verdict
    if verdict.kind != Kind.ALIASING:
        skip_on_this_torch(f"fixed: {verdict.summary()}")
    assert "shares storage with no input in eager, with x0 compiled" in verdict.summary()
    done = run_repro(write_repro(case, tmp_path / "repro"))
    assert done.returncode == 1 and "DIVERGES" in done.stdout, done.stdout + done.stderr


@pytest.mark.inductor
def test_a_real_noop_output_aliasing_is_reported_as_this_torch_behaves(inductor_runner) -> None:
    """A real finding of the ``integer`` strategy, minimized (torch 2.15, CPU): compiled
    ``x0 * 1`` returns ``x0`` itself, so a write to the result changes the argument; eager
    returns a new tensor (2.11 and 2.13 did too). Whether this torch does it is measured by the
    plain call beside the replay; the verdict must say the same, either way."""
    from pathlib import Path

    from fuzzer.corpus.case import Case

    case = Case.load(Path(__file__).parent / "data" / "aliasing_noop_mul_one.pt")
    assert "v1 = x0 * 1" in render.render_model(case.graph)
    x = torch.zeros(3, dtype=torch.int8)
    torch._dynamo.reset()
    aliases = torch.compile(lambda t: t * 1, backend="inductor")(x).data_ptr() == x.data_ptr()
    verdict = inductor_runner.run(case.task()).verdict
    assert (verdict.kind == Kind.ALIASING) == aliases, verdict.summary()
    if aliases:
        assert "shares storage with no input in eager, with x0 compiled" in verdict.summary()


def _window_read_goes_wrong() -> bool:
    """The plain form of the kept float16 case below, on this torch, its ``x`` at storage
    offset 1 as the case has it: does compiled ``x * 2`` after a fill through a window of ``x``
    passed beside it differ from eager, or fail to compile (RESULTS §23's cause C, seen again as
    §25's ``c280bf90cf4781d7``: 2.11 and 2.13 fail to compile it, 2.15 reads one element off)?
    Compiled afresh: Inductor's on-disk cache keys miss the layout of arguments that share
    storage (§23's D), so a graph another test compiled for another layout could answer."""
    def forward(x, index, window):
        window.index_fill_(2, index, -2.0)
        return x * 2.0

    def laid() -> torch.Tensor:  # numfuzz's ``offset`` layout: no view, storage offset 1
        storage = torch.arange(100, dtype=torch.float16).untyped_storage()
        return torch.empty(0, dtype=torch.float16).set_(storage, 1, (3, 1, 1, 33),
                                                        (33, 33, 33, 1))

    eager, compiled, index = laid(), laid(), torch.tensor([0])
    torch._dynamo.reset()
    try:
        with torch._inductor.config.patch(force_disable_caches=True):
            out = torch.compile(forward, backend="inductor")(compiled, index,
                                                             compiled[:3, :, ::2, 4:])
    except Exception:  # noqa: BLE001 - any compile failure is the bug showing
        return True
    return not torch.equal(out, forward(eager, index, eager[:3, :, ::2, 4:]))


@pytest.mark.inductor
def test_a_real_aliased_window_read_is_reported_as_this_torch_behaves(inductor_runner) -> None:
    """A real finding of the ``state`` strategy, minimized by a night on 2.15: float16 ``x0``
    (at storage offset 1, no view) and ``x0[:3, :, ::2, 4:]`` passed together, a fill through
    the window, then compiled ``x0 * 2.0`` reads ``x0`` one element further along: §23's cause
    C (the offset counted twice; no upstream issue found), its silent face on 2.15. Replayed,
    its verdict must be a finding exactly where the plain call goes wrong."""
    from pathlib import Path

    from fuzzer.corpus.case import Case

    case = Case.load(Path(__file__).parent / "data" / "aliased_fp16_window_read_off_by_one.pt")
    assert "return forward(x0, p2, x0[:3, :, ::2, 4:])" in render.render_model(case.graph)
    verdict = inductor_runner.run(case.task()).verdict
    if verdict.kind == Kind.CRASH and "as_strided_scatter" in verdict.message:
        skip_on_this_torch(f"it stops earlier, at §23's cause C: {verdict.summary()}")
    assert verdict.is_finding == _window_read_goes_wrong(), verdict.summary()


@pytest.mark.inductor
def test_a_real_finding_on_arguments_sharing_storage_replays(inductor_runner, tmp_path) -> None:
    """A real bug the ``state`` strategy found through arguments that share storage, minimized
    (torch 2.11, 2.13 and 2.15, CPU; ``aot_eager`` too): called as ``forward(x0, ...,
    x0[1:3, 7:9])``, a write to ``x0``'s columns 8, 10, ... does not show through the window
    passed beside it, because AOTAutograd's overlap test for two 2-d arguments
    (``tensors_definitely_do_not_overlap``) checks only where the window's row falls within
    the stride, not whether ``x0``'s own row covers it, and calls them disjoint. Replayed: still
    that finding; its repro and its plain snippet both show it."""
    from pathlib import Path

    from fuzzer.corpus.case import Case
    from fuzzer.reduce.repro import write_repro
    from fuzzer.reduce.snippet import plain_repro
    from fuzzer.triage.signature import aliased_arguments
    from tests.conftest import run_repro

    case = Case.load(Path(__file__).parent / "data" / "aliased_window_stale_read.pt")
    source = render.render_model(case.graph)
    assert "return forward(x0, x3, x6, x0[1:3, 7:9])" in source and "v2.sub_(x3)" in source
    assert aliased_arguments(case.graph) == "read"
    verdict = inductor_runner.run(case.task()).verdict
    if not verdict.is_finding:
        skip_on_this_torch(f"fixed: {verdict.summary()}")
    assert verdict.output == 0, verdict.summary()
    done = run_repro(write_repro(case, tmp_path / "repro"))
    assert done.returncode == 1 and "DIVERGES" in done.stdout, done.stdout + done.stderr
    plain = plain_repro(case, inductor_runner, tmp_path, "plain").source
    assert "compiled_forward = torch.compile(forward)" in plain, plain
    (tmp_path / "plain.py").write_text(plain)
    ran = run_repro(tmp_path / "plain.py", cwd=tmp_path)
    assert ran.returncode == 0 and "inf" in ran.stdout, ran.stdout + ran.stderr


def test_training_takes_gradients_through_writes_for_inputs_it_does_not_write(fake_runner):
    """In ``--training`` a written input (the shifted, added-to ``x0``) gets no gradient of its
    own; the one it is written from (``x4``, through ``x0.add_(x4)``) does, judged as a float.
    A planted wrong gradient is found there."""
    from fuzzer.execute.surface import Surface

    task = _state_task("eager")
    recipe = Recipe("eager", surface=Surface(training=True))
    verdict = fake_runner.run(Task(**{**task.__dict__, "recipe": recipe})).verdict
    assert verdict.kind == Kind.OK, verdict.summary()
    grads = [o.details.gradient_of for o in verdict.outputs
             if o.details.gradient_of is not None]
    assert grads == [4]  # x0 is written: no gradient is taken for it
    planted = Recipe("tests.fakes:scaled_gradients", surface=Surface(training=True))
    wrong = fake_runner.run(Task(**{**task.__dict__, "recipe": planted})).verdict
    assert wrong.is_finding and "gradient of input node 4" in wrong.place, wrong.summary()


def test_a_model_files_state_is_judged_too(fake_runner) -> None:
    """A KernelBench file whose forward writes its input and two buffers: capture keeps the
    writes (no rewriting ``x.relu_()`` out of place), the file's own run is judged on what it
    leaves in them, and compiled losing those writes is a finding there."""
    from pathlib import Path

    from fuzzer.user.capture import capture_file

    path = Path(__file__).parent / "models" / "state" / "counter_average_shift.py"
    captured = capture_file(path)
    source = render.render_model(captured.graph)
    assert "x2[1:] = v9" in source and ".relu_()" in source and ".add_(1)" in source
    assert len(captured.graph.written_inputs()) == 3  # the input, the counter, the average
    for backend, finding in (("eager", False), ("tests.fakes:drop_input_writes", True)):
        task = captured.case("cpu").task(recipe=Recipe(backend))
        task.model_file, task.seed = str(path.resolve()), 0
        verdict = fake_runner.run(task).verdict
        states = [o for o in verdict.outputs if o.details.state_of is not None]
        assert len(states) == 3 and verdict.is_finding == finding, verdict.summary()


def test_the_real_aliasing_cause_is_known_upstream() -> None:
    """The kept real finding (and the three a 90-minute night on 2.15 saved) is #195451: its
    cause matches that known entry, so a night counts it instead of drafting it again; the
    same core judged by a wrong value is #198094's entry, and as a crash neither."""
    from pathlib import Path

    from fuzzer.corpus.case import Case
    from fuzzer.triage import known
    from fuzzer.triage.signature import signature_fields

    case = Case.load(Path(__file__).parent / "data" / "aliasing_setitem_diagonal_clone.pt")
    fields = signature_fields(case, None)
    found = known.match(fields)
    assert found is not None and found.id == "scatter-copy-back-output-aliasing", fields
    assert "195451" in " ".join(found.urls)
    # the same core judged by a wrong value (a later write to the input shows in the dropped
    # clone) is its value side, #198094; as a crash it is neither
    for family, expected in (("accuracy", "reinplaced-clone-sees-later-write"),
                             ("nonfinite", "reinplaced-clone-sees-later-write"),
                             ("crash", None)):
        other = known.match({**fields, "family": family})
        assert (other and other.id) == expected, (family, other)
        assert other is None or "198094" in " ".join(other.urls)
    noop = signature_fields(Case.load(Path(__file__).parent / "data" /
                                      "aliasing_noop_mul_one.pt"), None)
    found = known.match(noop)  # x0 * 1 returned as x0 (#197893), on the torches it names
    on_this_torch = known.applies_to(">=2.14", torch.__version__)
    assert (found is not None and found.id == "noop-arithmetic-output-aliasing") == \
        on_this_torch, (noop, found)


def test_the_plain_snippet_keeps_an_inputs_layout_and_inductors_settings() -> None:
    """An input at an offset in its storage (numfuzz's ``offset`` layout) is written as such
    and copied as such before each call, and Inductor runs with ``fallback_random`` as in
    every worker: RESULTS §23's cause C shows only with both. A contiguous input keeps the
    short form."""
    import torch

    from fuzzer.corpus.case import Case
    from fuzzer.reduce.snippet import literal_tensor, snippet_source

    graph = _write_beside_a_passed_window()
    x = graph.input_ids()[0]
    storage = torch.arange(64.0)
    laid = storage[1:].view(7, 9)
    source = snippet_source(Case(graph=graph, inputs={str(x): laid}, recipe=Recipe("inductor")),
                            {"x0": literal_tensor(laid)})
    assert "def copy(x)" in source and "xs = [copy(x) for x in xs]" in source
    assert ".as_strided((7, 9), (9, 1), 1)" in source
    assert "torch._inductor.config.fallback_random = True" in source
    plain = snippet_source(Case(graph=graph, inputs={str(x): storage[:63].view(7, 9).clone()},
                                recipe=Recipe("eager")), {"x0": "torch.zeros(7, 9)"})
    assert "def copy(x)" not in plain and "xs = [x.clone() for x in xs]" in plain
    assert "fallback_random" not in plain


def test_an_expression_reads_a_reread_as_its_alias() -> None:
    """A draft's title spells the diverging value as one expression: a view read again after a
    write to its storage is that view (a reread renders as nothing of its own)."""
    graph = _write_beside_a_passed_window()
    assert render.expression(graph, graph.outputs[0], {graph.input_ids()[0]: "x"}) == \
        "torch.sum((x[1:, 2:]), dim=0, keepdim=True)"


def test_a_repeated_index_of_a_write_that_does_not_accumulate_is_never_drawn_nor_loaded() -> None:
    """``x.index_put_((i,), v)`` with ``i = [0, 0]`` keeps either row of ``v``: not defined, so
    no finding (a night saved one as ``nonfinite`` before the generator bounded the count by the
    rows of ``x``). The draw refuses to make such indices, and a case file holding one is
    refused at load."""
    b = Builder(random.Random(0), "float32")
    x = b.input((1, 3))
    index = b.input((2,), role="unique", dtype="int64", bound=1)
    b.graph.outputs = [b.op("index_put_", x, index, b.input((2, 3)), accumulate=False)]
    b.graph.infer()
    with pytest.raises(ValueError, match="2 distinct indices below 1 do not exist"):
        inputs.draws(b.graph, 0, 1)
    case = Case(graph=b.graph, inputs={"0": torch.zeros(1, 3), "1": torch.tensor([0, 0]),
                                       "2": torch.ones(2, 3)}, device="cpu", dtype="float32")
    with pytest.raises(CaseError, match="input 1 repeats an index it must keep distinct"):
        Case.from_dict(case.to_dict())
    case.inputs["1"] = torch.tensor([0, 1])  # distinct, though out of x's rows: eager's error
    assert Case.from_dict(case.to_dict()).inputs["1"].tolist() == [0, 1]

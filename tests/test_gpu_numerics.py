"""What a GPU does to the verdict, tested on the CPU with fakes (issue 27): TF32 as eager's own
noise, run-to-run nondeterminism on either side, CUDA graphs' static outputs, and which errors
poison a worker's CUDA context or are out-of-memory skips. The worker-level CUDA tests (errors,
flags pinned, SDPA recorded and pinned, triage's new knobs) are in tests/test_gpu_worker.py."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from fuzzer.campaign.settings import Settings, make_case
from fuzzer.execute import faults, runner
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.runner import Programs, run_draw
from fuzzer.gen.grammar import Builder
from fuzzer.ir import render
from fuzzer.judge import oracle, rules, semantics
from fuzzer.judge.kinds import Kind
from tests import gpu_fakes, test_signed_zero, test_stability

# ------------------------------------------------------------------ TF32 is eager's own noise

TF32_DROPPED = 13  # float32 keeps 23 mantissa bits, TF32 10


def tf32_nearest(t: torch.Tensor) -> torch.Tensor:
    """``t`` rounded to TF32 to nearest, ties to even, as cuBLAS and cuDNN convert operands."""
    bits = t.view(torch.int32)
    keep = (bits >> TF32_DROPPED) & 1
    return ((bits + (1 << (TF32_DROPPED - 1)) - 1 + keep) & ~((1 << TF32_DROPPED) - 1)) \
        .view(torch.float32)


def tf32_stochastic(t: torch.Tensor) -> torch.Tensor:
    """``t`` rounded to TF32 stochastically (unbiased, seeded): another TF32 implementation,
    whose rounding error is independent of eager's and about 1.4 times as large."""
    bits = t.view(torch.int32)
    gen = torch.Generator().manual_seed(1)
    dither = torch.randint(0, 1 << TF32_DROPPED, t.shape, generator=gen, dtype=torch.int32)
    return ((bits + dither) & ~((1 << TF32_DROPPED) - 1)).view(torch.float32)


def bf16_nearest(t: torch.Tensor) -> torch.Tensor:
    """Operands rounded to bfloat16 (7 mantissa bits): far coarser than TF32."""
    return t.to(torch.bfloat16).to(torch.float32)


class GemmOperands(TorchFunctionMode):
    """Rounds the float32 operands of linear, conv2d and matmul as reduced-precision tensor-core
    math does; float64 operands (the reference) are left exact, as TF32 leaves them."""

    def __init__(self, rounding) -> None:
        super().__init__()
        self.rounding = rounding

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (F.linear, F.conv2d, torch.matmul):
            args = tuple(self.rounding(a) if isinstance(a, torch.Tensor)
                         and a.dtype == torch.float32 else a for a in args)
        return func(*args, **(kwargs or {}))


def under(rounding, fn):
    """``fn`` with its GEMM operands rounded by ``rounding`` (None: IEEE float32)."""
    if rounding is None:
        return fn

    def run(*args):
        with GemmOperands(rounding):
            return fn(*args)

    return run


def conv_linear_graph():
    """An fp32 conv and an fp32 linear, each a float output, and an E8M0 head on the linear."""
    b = Builder(random.Random(0), "float32")
    x = b.input((2, 3, 8, 8))
    conv = b.conv(x, 8, 3)
    t = b.input((16, 64))
    lin = b.linear(t, 32)
    b.graph.outputs = [conv, lin, b.op("e8m0", lin, eps=1e-30)]
    gen = torch.Generator().manual_seed(0)
    args = [torch.randn(b.graph.node(n).shape, generator=gen) for n in b.graph.input_ids()]
    return b.graph, args


def judged(eager_rounding, compiled_rounding):
    """The verdict of run_draw when eager's GEMMs round so and compiled's so: run_draw and the
    oracle exactly as a worker runs them, only the two programs' numerics are the fakes'."""
    graph, args = conv_linear_graph()
    programs = Programs.build(graph)
    compiled = under(compiled_rounding, programs.model)
    programs.model = under(eager_rounding, programs.model)
    programs.trace = under(eager_rounding, programs.trace)  # eager's values, and float64's
    verdict, _ = run_draw(programs, compiled, args, Recipe("eager"))
    return verdict


def test_tf32_in_eager_and_in_compiled_is_not_a_finding() -> None:
    verdict = judged(tf32_nearest, tf32_stochastic)
    floats = [o for o in verdict.outputs if o.dtype == "float32"]
    assert [o.kind for o in floats] == ["ok", "ok"], verdict.summary()  # not even allclose:
    graph, args = conv_linear_graph()  # the two differ far beyond the float32 tolerance
    programs = Programs.build(graph)
    eager = under(tf32_nearest, programs.model)(*args)[1]
    other = under(tf32_stochastic, programs.model)(*args)[1]
    assert not torch.allclose(eager, other, atol=1e-4, rtol=1e-4)
    assert not verdict.is_finding, verdict.summary()


def test_ieee_compiled_under_tf32_eager_is_not_a_finding() -> None:
    """Inductor's Triton conv template computes in IEEE float32 where cuDNN uses TF32."""
    verdict = judged(tf32_nearest, None)
    assert not verdict.is_finding, verdict.summary()


def test_tf32_noise_would_be_a_finding_if_only_compiled_had_it() -> None:
    """Why the worker pins one set of flags for both sides: against an IEEE eager, TF32 alone is
    an accuracy finding."""
    verdict = judged(None, tf32_nearest)
    assert [o.kind for o in verdict.outputs[:2]] == [Kind.ACCURACY] * 2, verdict.summary()


def test_compiled_worse_than_tf32_eager_is_still_a_finding() -> None:
    verdict = judged(tf32_nearest, bf16_nearest)
    assert [o.kind for o in verdict.outputs[:2]] == [Kind.ACCURACY] * 2, verdict.summary()


# ------------------------------------------------------------------ run to run


def test_run_to_run_marks_elements_that_differ_nan_equal_to_nan() -> None:
    a = [torch.tensor([1.0, float("nan"), 3.0]), torch.tensor([1, 2], dtype=torch.uint8)]
    b = [torch.tensor([1.0, float("nan"), 4.0]), torch.tensor([1, 2], dtype=torch.uint8)]
    masks = oracle.run_to_run(a, b)
    assert masks[0].tolist() == [False, False, True] and masks[1] is None
    with pytest.raises(ValueError):
        oracle.run_to_run(a, [b[0]])
    with pytest.raises(ValueError):
        oracle.run_to_run(a, [b[0], b[1].to(torch.int32)])


def test_steadied_takes_eager_where_either_side_varies() -> None:
    eager = [torch.tensor([5, 6, 7], dtype=torch.uint8)]
    compiled = [torch.tensor([9, 6, 8], dtype=torch.uint8)]
    unstable = oracle.either([torch.tensor([False, False, True])],
                             [torch.tensor([True, False, False])])
    assert oracle.steadied(eager, compiled, unstable)[0].tolist() == [5, 6, 7]
    assert oracle.steadied(eager, compiled, [None])[0].tolist() == [9, 6, 8]
    other = [torch.tensor([9, 6], dtype=torch.uint8)]  # a meta divergence is left as it is
    assert oracle.steadied(eager, other, [torch.tensor([True, True])])[0].tolist() == [9, 6]


def _e8m0_draw():
    b = Builder(random.Random(0), "float32")
    x = b.input((4,))
    b.graph.outputs = [b.op("exp", x), b.op("e8m0", b.op("mul_scalar", x, value=3.0), eps=1e-30)]
    return Programs.build(b.graph), [torch.tensor([0.3, 1.5, -2.0, 6.0])]


@pytest.mark.parametrize("fake, output", [(gpu_fakes.nondeterministic_code, 1),
                                          (gpu_fakes.nondeterministic_inf, 0)])
def test_a_difference_between_two_compiled_runs_is_never_a_finding(fake, output) -> None:
    programs, args = _e8m0_draw()
    verdict, outputs = run_draw(programs, fake(programs.model, None), args, Recipe("eager"))
    assert not verdict.is_finding, verdict.summary()
    assert verdict.outputs[output].details.unstable == 1, verdict.outputs[output]


def test_a_difference_between_two_eager_runs_is_never_a_finding() -> None:
    """Eager itself varies (atomics): the element that varies is left out, the others judged."""
    programs, args = _e8m0_draw()
    model, calls = programs.model, {"n": 0}

    def three_up(out):
        out = list(out)
        out[1] = out[1].clone()
        out[1][0] += 3  # three codes away: strong even with no head to measure (a model file)
        return out

    def jittery(*a):  # eager's second run is three codes up at element 0 of the head
        calls["n"] += 1
        return three_up(model(*a)) if calls["n"] == 2 else list(model(*a))

    programs.model, programs.nodewise = jittery, False
    programs.trace = lambda *a: dict(zip(programs.graph.outputs, model(*a)))
    compiled = lambda *a: three_up(model(*a))  # noqa: E731  compiled lands where eager's 2nd did
    verdict, _ = run_draw(programs, compiled, args, Recipe("eager"))
    assert not verdict.is_finding, verdict.summary()
    assert verdict.outputs[1].details.unstable == 1
    calls["n"] = 10  # the control: eager steady, the same compiled is a finding
    steady, _ = run_draw(programs, compiled, args, Recipe("eager"))
    assert steady.kind == Kind.INT_FLIP, steady.summary()


def test_a_stable_divergence_beside_unstable_elements_is_still_found() -> None:
    programs, args = _e8m0_draw()
    both = gpu_fakes.nondeterministic_inf(gpu_fakes.uint8_plus_one(programs.model, None), None)
    verdict, _ = run_draw(programs, both, args, Recipe("eager"))
    assert verdict.kind == Kind.INT_FLIP, verdict.summary()
    assert verdict.outputs[0].details.unstable == 1


def test_static_outputs_of_cuda_graphs_are_cloned_before_the_next_run() -> None:
    """Outputs written into static buffers (CUDA graphs) and a second run that differs: only a
    runner that clones the first run's outputs sees the two runs differ."""
    programs, args = _e8m0_draw()
    verdict, outputs = run_draw(programs, gpu_fakes.static_outputs(programs.model, None), args,
                                Recipe("eager"))
    assert not verdict.is_finding, verdict.summary()
    assert verdict.outputs[1].details.unstable == 1
    assert torch.equal(outputs["compiled"][1], outputs["eager"][1])  # the first run's own values


# ------------------------------------------------------------------ which errors are which


@pytest.mark.parametrize("line, poisons, oom", [
    (f"AcceleratorError: {gpu_fakes.ILLEGAL_ACCESS.splitlines()[0]} (at x.py:3)", True, False),
    ("RuntimeError: CUDA error: device-side assert triggered", True, False),
    ("RuntimeError: CUDA driver error: an illegal memory access was encountered", True, False),
    ("RuntimeError: Triton Error [CUDA]: unspecified launch failure", True, False),
    ("InductorError: AcceleratorError: CUDA error: misaligned address", True, False),
    (f"OutOfMemoryError: {gpu_fakes.OUT_OF_MEMORY}", False, True),
    ("RuntimeError: CUDA error: out of memory", False, True),
    ("OutOfMemoryError: out of resource: triton_poi_fused_0 Required: 262144 Hardware limit: "
     "232448", False, False),
    ("RuntimeError: planted compiler failure", False, False),
])
def test_cuda_errors_are_told_apart_by_type_name_and_message(line, poisons, oom) -> None:
    assert faults.poisons_context(line) is poisons
    assert faults.out_of_memory(line) is oom


# ------------------------------------------------------------------ values in a device's memory


def _minimum_zeros():
    """A signed-zero finding whose rule has a per-element mask: ``minimum(-0.0, +0.0)`` may
    return either zero (``OpSpec.unsigned``), the other elements' zero signs are defined."""
    return test_signed_zero._binary("minimum"), test_signed_zero.ZEROS, \
        lambda e, r: torch.where(e == 0, -e, e)


def _frexp_exponents():
    """An int-flip judged with a head's strong mask, an undefined mask and stable codes."""
    graph, args = test_stability._frexp_exponent_of(chaotic=False)
    return graph, args, lambda e, r: r.to(e.dtype) + 5


def _verdicts(graph, args, plant) -> tuple:
    """The verdict's summary on host values and on device values (``OnDevice``), compiled
    planted as ``plant(eager, float64)`` on every judged value."""
    trace = render.load(render.render_trace(graph), "trace")
    eager_values, fp64 = trace(*[rules.fresh(a) for a in args]), rules.float64_run(trace, args)
    keys = semantics.judged(graph)
    eager = [eager_values[k] for k in keys]
    compiled = [plant(eager_values[k], fp64[k]) for k in keys]

    def judged(where):
        nudged = lambda: where(runner.nudged_runs(graph, args))  # noqa: E731
        return semantics.judge_graph(graph, where(eager), where(compiled), where(fp64),
                                     where(eager_values), nudged=nudged)

    return judged(lambda v: v), judged(gpu_fakes.on_device)


@pytest.mark.parametrize("case", [_minimum_zeros, _frexp_exponents])
def test_values_in_a_device_memory_are_judged_as_on_the_host(case) -> None:
    """On a GPU the runs' values are the device's and the masks judging makes are the host's:
    the first GPU run (RESULTS §4) found every such case a harness error. ``OnDevice`` raises
    where a host tensor meets a device one, as CUDA does."""
    with pytest.raises(RuntimeError, match="same device"):  # the fake does stand for a device
        torch.ones(2).as_subclass(gpu_fakes.OnDevice) + torch.ones(2)
    on_host, on_device = _verdicts(*case())
    assert on_host.is_finding, on_host.summary()
    assert on_device.summary() == on_host.summary()


def _planted(eager: torch.Tensor, fp64: torch.Tensor) -> torch.Tensor:
    """A compiled value that differs from eager's on every element."""
    if eager.dtype == torch.bool:
        return ~eager
    return eager * 1.001 if eager.is_floating_point() else eager + 3


def test_generated_programs_are_judged_alike_in_device_memory() -> None:
    """The same over generated programs of every strategy (before judging moved to the host,
    more than half of the first 60 differed): each verdict, compiled planted off eager's
    everywhere, is the same on device values as on host ones."""
    settings = Settings(out=Path("unused"), seed=0)
    for index in range(30):
        case, task = make_case(settings, index)
        args = [task.draws[0][str(n)] for n in case.graph.input_ids()]
        on_host, on_device = _verdicts(case.graph, args, _planted)
        assert on_device.summary() == on_host.summary(), case.origin

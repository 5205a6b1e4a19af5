"""Fake compiled backends that plant known divergences, so oracle, workers and minimizer are tested
without depending on real Inductor bugs. Each is a torch.compile backend named on the command line
or in a Task as ``tests.fakes:<name>``; they run in worker processes, so they must be importable.
"""

from __future__ import annotations

import ctypes
import math
import os
import signal
import time

import torch
import torch.fx


def _rewrite(gm: torch.fx.GraphModule, target, replacement) -> torch.fx.GraphModule:
    """Swap every call of ``target`` in Dynamo's torch-level graph for ``replacement``."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is target:
            node.target = replacement
    gm.recompile()
    return gm


def _map_outputs(gm: torch.fx.GraphModule, change):
    def run(*args):
        outs = gm(*args)
        seq = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        seq = change(seq)
        return type(outs)(seq) if isinstance(outs, (tuple, list)) else seq[0]

    return run


def uint8_plus_one(gm, example_inputs):
    """The first uint8 output gets +1 on its first element."""

    def change(outs):
        for i, out in enumerate(outs):
            if out.dtype == torch.uint8:
                out = out.contiguous().clone()  # a view of it may be laid out any way
                out.view(-1)[0] += 1
                outs[i] = out
                break
        return outs

    return _map_outputs(gm, change)


def inject_inf(gm, example_inputs):
    """The first float output's first element becomes inf."""

    def change(outs):
        for i, out in enumerate(outs):
            if out.is_floating_point():
                out = out.contiguous().clone()  # a view of it may be laid out any way
                out.view(-1)[0] = math.inf
                outs[i] = out
                break
        return outs

    return _map_outputs(gm, change)


def _erf_one_ulp_up(x):
    out = torch.erf(x)
    return torch.nextafter(out, torch.full_like(out, math.inf))


def erf_ulp(gm, example_inputs):
    """torch.erf returns one ulp too high: downstream discrete heads flip only where float64 sits
    within rounding noise of their boundaries (weak evidence, not a finding)."""
    return _rewrite(gm, torch.erf, _erf_one_ulp_up)


def _erf_quarter(x):
    return torch.erf(x) * 0.25


def erf_quarter(gm, example_inputs):
    """torch.erf returns a quarter of its value: every E8M0 code downstream drops by two steps,
    which no rounding explains (strong evidence even where float64 sits on a boundary)."""
    return _rewrite(gm, torch.erf, _erf_quarter)


def _exp_overflowing(x):
    return torch.where(x > 1.0, torch.full_like(x, math.inf), torch.exp(x))


def exp_overflow(gm, example_inputs):
    """torch.exp overflows to inf for inputs above 1, where eager is finite."""
    return _rewrite(gm, torch.exp, _exp_overflowing)


def more_accurate(gm, example_inputs):
    """Computes in float64 and rounds once at the end: closer to float64 than eager, not a bug."""

    def run(*args):
        wide = [a.double() if a.is_floating_point() else a for a in args]
        outs = gm(*wide)
        seq = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        narrow = [o.to(a.dtype) for o, a in zip(seq, _dtypes_like(seq, args))]
        return type(outs)(narrow) if isinstance(outs, (tuple, list)) else narrow[0]

    return run


def _dtypes_like(outs, args):
    float_dtype = next((a.dtype for a in args if a.is_floating_point()), torch.float32)
    return [torch.empty(0, dtype=o.dtype if not o.is_floating_point() else float_dtype)
            for o in outs]


def segfault(gm, example_inputs):
    def run(*args):
        os.kill(os.getpid(), signal.SIGSEGV)

    return run


def one_byte_past_the_end(gm, example_inputs):
    """Values exact, but each call writes one byte past the end of a 33-byte buffer it allocates
    (flips the byte there): a heap overflow only glibc's malloc checking notices. glibc rounds
    the block up to 40 usable bytes, so without checking the byte is the block's own slack;
    under checking it is the block's check byte, and its ``free`` aborts."""

    def change(outs):
        scratch = torch.empty(33, dtype=torch.uint8)
        past = ctypes.c_uint8.from_address(scratch.data_ptr() + 33)
        past.value ^= 0xFF
        del scratch
        return outs

    return _map_outputs(gm, change)


def hang(gm, example_inputs):
    def run(*args):
        time.sleep(3600)

    return run


def raises(gm, example_inputs):
    raise RuntimeError("planted compiler failure")


_compiles = 0


def flaky(gm, example_inputs):
    """Diverges (erf_quarter) on every other compile: a nondeterministic compiled result.
    Alternating rather than random, so any three runs in a row are neither 3/3 nor 0/3."""
    global _compiles
    _compiles += 1
    return erf_quarter(gm, example_inputs) if _compiles % 2 else gm


# Divergences that fire only on one input domain or shape (the discovery strategies' targets).


def _finite_subnormal(t: torch.Tensor) -> bool:
    if not t.is_floating_point() or t.numel() == 0:
        return False
    a = t.abs()
    return bool(((a > 0) & (a < torch.finfo(t.dtype).tiny)).any())


def _nan_when(gm, condition):
    """``gm``, except that when ``condition`` holds for any input, the first float output's
    first element is NaN."""

    def run(*args):
        outs = list(gm(*args))
        if any(condition(a) for a in args):
            for i, out in enumerate(outs):
                if out.is_floating_point() and out.numel():
                    outs[i] = out.contiguous().clone()
                    outs[i].view(-1)[0] = math.nan
                    break
        return tuple(outs)

    return run


def nan_on_subnormal(gm, example_inputs):
    """When any float input holds a subnormal, the first float output's first element is NaN."""
    return _nan_when(gm, _finite_subnormal)


def nan_on_layout(gm, example_inputs):
    """When any input is stored other than contiguously from the start of its storage
    (transposed, permuted, channels-last, strided, sliced, padded, expanded, at an offset), the
    first float output's first element is NaN: a divergence that only a case, replay and
    repro.py keeping the inputs' layouts exactly still show."""
    return _nan_when(gm, lambda a: not a.is_contiguous() or a.storage_offset() != 0)


def reshape_on_empty(gm, example_inputs):
    """When any input has a size-0 dim, every output comes back flattened with one extra zero
    (a shape no eager run has)."""

    def run(*args):
        outs = list(gm(*args))
        if any(0 in a.shape for a in args):
            outs = [torch.cat([o.reshape(-1), o.new_zeros(1)]) for o in outs]
        return tuple(outs)

    return run


def off_by_one_on_int(gm, example_inputs):
    """When any input is an integer tensor (not bool), integer outputs get +1 everywhere."""

    def run(*args):
        outs = list(gm(*args))
        if any(not a.is_floating_point() and a.dtype != torch.bool for a in args):
            outs = [o + 1 if not o.is_floating_point() and o.dtype != torch.bool else o
                    for o in outs]
        return tuple(outs)

    return run


# Faults of the process that runs the worker (a Ray actor): tests/test_fleet.py only.


def _targets(args) -> bool:
    """Cases with an input of a multiple of 3 elements: a deterministic subset."""
    return any(a.numel() % 3 == 0 for a in args)


def _driver() -> int:
    """The process this worker serves: its parent, unless the zygote forked it."""
    from fuzzer.execute.workers import DRIVER_ENV

    return int(os.environ.get(DRIVER_ENV, os.getppid()))


def _signal_parent(gm, sig: int):
    """``gm``, except that on the targeted cases it sends ``sig`` to the worker's parent."""

    def run(*args):
        if _targets(args):
            os.kill(_driver(), sig)
            time.sleep(60)
        return gm(*args)

    return run


def kill_parent(gm, example_inputs):
    """On the targeted cases, SIGKILL the worker's parent: the actor dies, not just the worker."""
    return _signal_parent(gm, signal.SIGKILL)


def stop_parent(gm, example_inputs):
    """On the targeted cases, SIGSTOP the worker's parent: the actor hangs without dying."""
    return _signal_parent(gm, signal.SIGSTOP)


def scaled_gradients(gm, example_inputs):
    """Forward exact; every gradient the backward computes comes out 1.25 times too large (a
    backward-only divergence, seen only by --training)."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    def forward(fw_gm, inputs):
        return make_boxed_func(fw_gm.forward)

    def backward(bw_gm, inputs):
        def run(*args):
            return [g * 1.25 if isinstance(g, torch.Tensor) and g.is_floating_point() else g
                    for g in bw_gm(*args)]

        return make_boxed_func(run)

    return aot_autograd(fw_compiler=forward, bw_compiler=backward)(gm, example_inputs)


def nan_when_dynamic(gm, example_inputs):
    """Exact when compiled for static shapes; compiled with symbolic sizes (dynamic=True: Dynamo
    hands them over as SymInt arguments), the first float output's first element is NaN."""
    if not any(isinstance(e, torch.SymInt) for e in example_inputs):
        return gm

    def change(outs):
        outs = list(outs)
        for i, out in enumerate(outs):
            if out.is_floating_point() and out.numel():
                outs[i] = out.clone()
                outs[i][(0,) * out.dim()] = float("nan")
                break
        return outs

    return _map_outputs(gm, change)


NONLINEAR = {"tanh", "sigmoid", "silu", "gelu", "erf", "exp", "sin", "cos", "softplus", "mish"}


def drift_per_nonlinearity(gm, example_inputs):
    """A narrow planted bug for guided search: every float output is off by 4e-5 relative per
    nonlinear call in the graph, so only a graph with about five of them fails ``same``, while
    fewer make near misses (``oracle.regression_score`` below 1) that mutation can climb from."""
    count = sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method")
                and getattr(n.target, "__name__", str(n.target)) in NONLINEAR)
    if not count:
        return gm

    def change(outs):
        return [o * (1 + 4e-5 * count) if o.is_floating_point() else o for o in outs]

    return _map_outputs(gm, change)


# ---------------------------------------------------------------- state: writes and aliases


def drop_input_writes(gm, example_inputs):
    """Compiled computes on copies of its inputs: outputs right, the inputs' writes lost."""

    def run(*args):
        return gm(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])

    return run


def separate_arguments(gm, example_inputs):
    """Compiled computes on a copy of each argument and copies each back after the call:
    right for arguments of their own, but arguments that share storage no longer see each
    other's writes during the call (the overlap between them is lost)."""

    def run(*args):
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        outs = gm(*copies)
        for a, c in zip(args, copies):
            if isinstance(a, torch.Tensor):
                a.copy_(c)
        return outs

    return run


def detach_outputs(gm, example_inputs):
    """Every output comes back as a fresh copy: an output that was a view of an input no
    longer shares its storage (a lost alias)."""

    def run(*args):
        outs = gm(*args)
        seq = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        seq = [o.clone() for o in seq]
        return type(outs)(seq) if isinstance(outs, (tuple, list)) else seq[0]

    return run


def overshoot_input_writes(gm, example_inputs):
    """A written input is left one larger than it should be (a wrong buffer update)."""

    def run(*args):
        before = [a.clone() for a in args]
        outs = gm(*args)
        for a, b in zip(args, before):
            if not torch.equal(a, b):
                with torch.no_grad():
                    a.add_(1)
        return outs

    return run


def stray_input_write(gm, example_inputs):
    """Compiled also writes the last float input the program only reads."""

    def run(*args):
        before = [a.clone() for a in args]
        outs = gm(*args)
        untouched = [a for a, b in zip(args, before) if a.is_floating_point()
                     and torch.equal(a, b)]
        if untouched:
            with torch.no_grad():
                untouched[-1].view(-1)[0] += 1
        return outs

    return run


def graph_break(gm, example_inputs):
    """Every compiled call raises Dynamo's Unsupported: a feature it lacks, so no case is
    judged (each is a skip), whatever the program."""
    import torch._dynamo.exc

    def run(*args):
        raise torch._dynamo.exc.Unsupported("planted: a feature Dynamo lacks")

    return run


def next_index(gm, example_inputs):
    """Every int64 output (an index) points one element further."""

    def change(outs):
        return [o + 1 if o.dtype == torch.int64 else o for o in outs]

    return _map_outputs(gm, change)


def _ieee_pow(base, exponent):
    """``pow`` with no sqrt/rsqrt shortcut (a tensor exponent): IEEE 754's values at -0.0 and
    -inf, which Inductor's ``std::pow`` gives and eager's shortcut does not."""
    if isinstance(exponent, (int, float)):
        exponent = torch.tensor(float(exponent), dtype=base.dtype, device=base.device)
    return torch.pow(base, exponent)


def ieee_pow(gm, example_inputs):
    """``torch.pow`` as IEEE 754 defines it, as Inductor's generated code computes it."""
    return _rewrite(gm, torch.pow, _ieee_pow)


def ieee_pow_finite(gm, example_inputs):
    """``ieee_pow``, but an infinite power comes out as 0.0: wrong by any reference."""
    return _rewrite(gm, torch.pow,
                    lambda b, e: torch.nan_to_num(_ieee_pow(b, e), posinf=0.0, neginf=0.0))


class NoValidChoicesError(RuntimeError):
    """Named as Inductor's ``select_algorithm.NoValidChoicesError``, which numfuzz matches by
    name (torch versions move the class)."""


def _no_gemm_choice(reason: str):
    def backend(gm, example_inputs):
        """Every compiled call raises as max-autotune does for a GEMM: wrapped, as Inductor
        wraps a lowering's error, with ``reason`` as the choices' reason."""

        def run(*args):
            try:
                raise NoValidChoicesError(f"No choices to select. Provided reason: {reason}")
            except NoValidChoicesError as err:
                raise RuntimeError("LoweringException: NoValidChoicesError") from err

        return run

    return backend


gemm_choice_missing = _no_gemm_choice("No choices exist for backend.")
gemm_choices_fail = _no_gemm_choice("All choices failed to compile for backend.")


def inf_when_freezing(gm, example_inputs):
    """Exact unless Inductor's ``freezing`` option is on while it compiles (a surface option):
    then the first float output's first element is inf. Triage's surface knob that takes
    freezing back makes it vanish."""
    import torch._inductor.config as inductor

    return inject_inf(gm, example_inputs) if inductor.freezing else gm


def _one_ulp_up(t: torch.Tensor) -> torch.Tensor:
    return torch.nextafter(t, torch.full_like(t, math.inf))


def float_outputs_one_ulp_up(gm, example_inputs):
    """Every float output one ulp above the truth: within any tolerance, but not eager's bits
    (what numerics="strict" promises)."""

    def change(outs):
        return [_one_ulp_up(o) if o.is_floating_point() else o for o in outs]

    return _map_outputs(gm, change)


def rows_depend_on_batch(gm, example_inputs):
    """Compiled for a batch of more than one row, the first row of every float output is one
    ulp high; for a single row, exact: a result that depends on the batch it is computed in
    (what batch_invariant promises it does not)."""
    batched = bool(example_inputs) and isinstance(example_inputs[0], torch.Tensor) \
        and example_inputs[0].dim() > 0 and example_inputs[0].shape[0] > 1

    def change(outs):
        outs = list(outs)
        for i, out in enumerate(outs):
            if batched and out.is_floating_point() and out.dim() and out.shape[0] > 1:
                outs[i] = out.clone()
                outs[i][:1] = _one_ulp_up(out[:1])
        return outs

    return _map_outputs(gm, change)


# ------------------------------------------------------------------ deployment stages
# On the export and aoti surfaces a trusted backend stands in for a stage of the deployment
# (``execute.calling.Deployed``): called as ``fake(program, args, stage)``, stage one of "export",
# "decompositions", "inductor", "aoti", it returns what runs. Each fake below is wrong from the
# stage it plants its bug in onwards, as a bug in that stage would be.

DEPLOY_ORDER = ("export", "decompositions", "inductor", "aoti")


def _from(stage: str, first: str) -> bool:
    return DEPLOY_ORDER.index(stage) >= DEPLOY_ORDER.index(first)


def export_drops_buffer_writes(program, args, stage):
    """From export on: the program's buffer writes are undone after each call (an export that
    loses a buffer mutation)."""
    if not _from(stage, "export"):
        return program

    def run(*xs):
        before = {name: b.clone() for name, b in program.named_buffers()}
        out = program(*xs)
        for name, b in program.named_buffers():
            b.copy_(before[name])
        return out

    return run


def package_perturbs_a_constant(program, args, stage):
    """Only in AOTInductor's package: the first parameter's first element one larger while it
    runs (a package that loads one constant wrong); every earlier stage exact. (The exported
    module shares its parameters with the module exported, so the change is undone after.)"""
    if stage != "aoti":
        return program
    params = list(program.parameters())

    def run(*xs):
        with torch.no_grad():
            for p in params[:1]:
                p.view(-1)[0] += 1.0
            try:
                return program(*xs)
            finally:
                for p in params[:1]:
                    p.view(-1)[0] -= 1.0

    return run


def export_refuses(program, args, stage):
    """torch.export declines the program, as it does a data-dependent branch."""
    from torch._dynamo.exc import UserError, UserErrorType

    raise UserError(UserErrorType.DYNAMIC_CONTROL_FLOW, "data-dependent control flow")


def package_fails_to_build(program, args, stage):
    """AOTInductor's package build raises on a program every earlier stage runs."""
    if stage == "aoti":
        raise RuntimeError("planted: the package build failed")
    return program


def _erf_nan(x):
    return torch.erf(x) * float("nan")


def erf_nan(gm, example_inputs):
    """torch.erf gives NaN: every value computed from it is non-finite, nothing before it is
    (what ``numfuzz locate`` must pin to the erf's line)."""
    return _rewrite(gm, torch.erf, _erf_nan)


def inf_with_two_outputs(gm, example_inputs):
    """Exact for a program of one output; for one that returns two or more, the first float
    output's first element is inf: a divergence no prefix of one output shows (one that needs
    the whole graph's fusion)."""
    outputs = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    if not isinstance(outputs, (tuple, list)) or len(outputs) < 2:
        return gm
    return inject_inf(gm, example_inputs)

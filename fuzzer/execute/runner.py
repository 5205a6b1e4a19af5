"""Run one program eager (twice), compiled (twice) and in float64, and hand the outputs to the
oracle. A value divergence in a graph holding an fp16/bf16 cast is judged once more under
``emulate_precision_casts`` (``expected_by_default``): where it vanishes, it is ``expected``.

This is the code a worker process executes; ``workers`` wraps it in isolated processes. What
crosses the pipe (``Task``, ``RunResult``) is ``execute.task``; what a compiled run that raised
means is ``execute.failures``; how the program is called is ``execute.calling``. Here: the draw
run (eager twice, compiled twice, float64, the verdict) and the promises a surface makes
(``numerics="strict"``, ``batch_invariant``, automatic dynamic's first call).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from fuzzer.execute import calling, config, faults, flags
from fuzzer.execute.failures import compiled_failure, error_line
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import RunResult, Task, harness_error
from fuzzer.ir import render
from fuzzer.ir.graph import Graph
from fuzzer.judge import oracle, rules, semantics
from fuzzer.judge.details import Details
from fuzzer.judge.key import same_divergence
from fuzzer.judge.kinds import RAISED, Kind
from fuzzer.judge.verdict import OutputVerdict, Verdict, most_severe


@dataclass
class Programs:
    """The rendered model and its eager-only trace twin, loaded once per task."""

    graph: Graph
    source: str
    model: Callable
    trace: Callable  # {node id: value} for every node (nodewise) or for the outputs only
    nodewise: bool = True  # False for a model file judged as itself: no graph to trace through
    eager_values: dict = field(default_factory=dict)  # not nodewise: what is known of its nodes
    # float64 values of every node with eager's rounding noise added back (``nudged_runs``), on
    # the run's arguments; None where no graph stands for the program (a model file whose
    # capture does not give its outputs bit for bit): then no code's stability is measured.
    nudged: Callable[[list[torch.Tensor]], list[dict]] | None = None
    # eager's values of every node with one step of noise on each float a dtype view
    # reinterprets (``bit_noise_runs``); None where no view reinterprets a computed float
    bit_noise: Callable[[list[torch.Tensor]], list[dict]] | None = None
    written: list[int] = field(default_factory=list)  # positions of the inputs it writes

    kinds: list[str] = field(default_factory=list)  # module form: per input x/param/buffer
    note: str = ""  # what a reader of the verdict must know about how it was judged

    @classmethod
    def build(cls, graph: Graph, training: bool = False) -> Programs:
        """The rendered programs; a graph whose inputs hold module state (``semantics.kinds``)
        runs as an ``nn.Module`` (``calling.module_program``), except in training, where its
        parameters are plain inputs that gradients are taken for."""
        source = render.render_model(graph)
        inputs = graph.input_ids()
        written = [inputs.index(n) for n in graph.written_inputs()]
        kinds = [] if training else semantics.kinds(graph)
        fn = render.load(source, "model")
        noisy = not semantics.float64_stands(graph) and render.bit_noise_sources(graph)
        return cls(graph, source, calling.module_program(fn, kinds, written) if kinds else fn,
                   render.load(render.render_trace(graph), "trace"),
                   nudged=lambda args: nudged_runs(graph, args),
                   bit_noise=(lambda args: bit_noise_runs(graph, args)) if noisy else None,
                   written=written, kinds=kinds)

    def compiled(self, recipe: Recipe) -> Callable:
        """The program compiled as ``recipe`` says: the module itself where it is one (so its
        parameters are what freezing sees), else the function."""
        if not self.kinds:
            return calling.compile_model(self.model, recipe.compile)
        fn = render.load(self.source, "model")
        return calling.module_program(fn, self.kinds, self.written, compile=recipe.compile)


def nudged_runs(graph: Graph, args: list[torch.Tensor]) -> list[dict]:
    """float64 values of every node of ``graph`` on ``args`` in ``rules.NUDGES`` runs with
    eager's rounding noise added back (``rules.nudge_``): does a discrete code survive it?"""
    fn = render.load(render.render_nudged_trace(graph), "nudged_trace", {"nudge_": rules.nudge_})
    return [rules.float64_run(lambda *wide, k=k: fn(k, *wide), args) for k in range(rules.NUDGES)]


def bit_noise_runs(graph: Graph, args: list[torch.Tensor]) -> list[dict]:
    """Eager's values of every node of ``graph`` on ``args`` in ``rules.NUDGES`` runs, each
    float a dtype view reinterprets moved one step first (``rules.step_bits_``): which judged
    elements does rounding noise, amplified by the reinterpretation, move?"""
    fn = render.load(render.render_bit_noise_trace(graph), "bit_noise_trace",
                     {"step_bits_": rules.step_bits_})
    return [fn(k, *[rules.fresh(a) for a in args]) for k in range(rules.NUDGES)]


def inductor_config(overrides: dict) -> contextlib.AbstractContextManager:
    """fallback_random as the pt2 template asks, plus the recipe's knobs (allowlisted)."""
    import torch._inductor.config as inductor

    return inductor.patch({"fallback_random": True, **config.check(overrides)})


def run_task(task: Task) -> RunResult:
    """Judge every draw; the most severe verdict (and its outputs when asked). A draw whose
    error poisoned the CUDA context ends the task (``faults``): its worker must be replaced.
    The surface's own checks come around the draws: automatic dynamic's first call at another
    size before them (``first_call_elsewhere``), a promise after them (``promise_kept``)."""
    task.recipe.check_for(task.device)
    programs = Programs.build(task.graph, task.recipe.surface.training)
    torch._dynamo.reset()
    compiled, refused = prepared(programs, task.recipe, task.draws[0], task.device)
    if refused is not None:
        return RunResult(refused)
    verdicts, kept = [], []
    lost = False
    for i, inputs in enumerate(task.draws):
        args = [rules.fresh(inputs[str(n)], task.device) for n in task.graph.input_ids()]
        verdict, outputs = run_draw(programs, compiled, args, task.recipe)
        verdict.draw = i
        verdict.magnitude = task.magnitudes[i] if i < len(task.magnitudes) else None
        verdicts.append(verdict)
        kept.append(outputs)
        if faults.poisons_context(verdict.message):
            lost = True
            break
    worst = most_severe(verdicts)
    counts = [v.frozen for v in verdicts if v.frozen is not None]
    worst.frozen = sum(counts) if counts else None  # the first draw compiles: its count
    if not lost and worst.draw is not None:
        draw = worst.draw
        args = [rules.fresh(task.draws[draw][str(n)], task.device)
                for n in task.graph.input_ids()]

        def emulated_run(emulated: Recipe) -> Verdict:
            again, refused = prepared(programs, emulated, task.draws[draw], task.device)
            return refused or run_draw(programs, again, args, emulated)[0]

        worst = expected_by_default(worst, task.graph, task.recipe, emulated_run)
        if task.recipe.surface.promise and not worst.is_finding and worst.kind != Kind.SKIP:
            worst = promise_kept(worst, programs, compiled, args, task.recipe, kept[draw])
    outputs = kept[worst.draw] if task.keep_outputs and worst.draw is not None else {}
    return RunResult(worst, [v.score for v in verdicts], outputs, context_lost=lost)


def prepared(programs: Programs, recipe: Recipe, draw: dict[str, torch.Tensor], device: str
             ) -> tuple[Callable, Verdict | None]:
    """The program compiled as ``recipe`` says, and on the automatic-dynamic surface its first
    call made at another size (``first_call_elsewhere``): a verdict instead where that call
    shows something (the program takes no other size: a skip; compiled fails: a crash)."""
    compiled = programs.compiled(recipe)
    if not recipe.surface.automatic:
        return compiled, None
    args = [rules.fresh(draw[str(n)], device) for n in programs.graph.input_ids()]
    return compiled, first_call_elsewhere(programs, compiled, args, recipe)


def batch_positions(graph: Graph, args: list[torch.Tensor]) -> list[int]:
    """The inputs that carry the batch: the activations (not weights or state) whose first dim
    is the first activation's."""
    roles = [graph.node(n).role for n in graph.input_ids()]
    activations = [i for i, (role, t) in enumerate(zip(roles, args)) if role == "x" and t.dim()]
    if not activations:
        return []
    size = args[activations[0]].shape[0]
    return [i for i in activations if args[i].shape[0] == size]


def first_call_elsewhere(programs: Programs, compiled: Callable, args: list[torch.Tensor],
                         recipe: Recipe) -> Verdict | None:
    """Automatic dynamic (torch.compile's default ``dynamic=None``): one call with the batch a
    row longer (``calling.grown``) before the judged ones, so that they run the kernel Inductor
    recompiles with the batch symbolic. None when that call went through; a skip where the
    program takes no other batch size (eager refuses it, or it has no batch); the verdict of a
    compiled failure on that call (a crash)."""
    batch = batch_positions(programs.graph, args)
    if not batch:
        return Verdict(Kind.SKIP, message="automatic dynamic: the program has no batch dim")
    grown = calling.grown(args, batch)
    try:
        _call(programs.model, grown, programs.written, False)
    except Exception as err:
        return Verdict(Kind.SKIP, message="automatic dynamic: the program takes no other "
                                          f"batch size ({error_line(err)})")
    try:
        with inductor_config(recipe.config):
            _compiled_run(compiled, grown, programs.written, False)
    except Exception as err:
        failure = compiled_failure(err, recipe, [])
        failure.message = f"{failure.message} [on the first call, a batch one row longer]"
        return failure
    return None


def promise_kept(verdict: Verdict, programs: Programs, compiled: Callable,
                 args: list[torch.Tensor], recipe: Recipe, outputs: dict) -> Verdict:
    """``verdict``, or a ``promise`` verdict where the surface's promise is broken on this draw:
    ``strict``, an output computed by ops numerics="strict" covers only
    (``semantics.strict_promised``) that is not eager's bit for bit; ``batch-invariant``, a row
    computed in the batch whose bits differ from the same row computed alone (where float64
    says the program computes each row from that row only)."""
    graph, promise = programs.graph, recipe.surface.promise
    keys = semantics.judged(graph)
    if promise == "strict":
        for i, key in enumerate(keys):
            eager, compiled_out = outputs.get("eager", []), outputs.get("compiled", [])
            if i < len(eager) and i < len(compiled_out) and \
                    semantics.strict_promised(graph, key) and \
                    not rules.same_bits(eager[i], compiled_out[i]):
                differ = int((eager[i] != compiled_out[i].to(eager[i].device)).sum())
                return _broken(verdict, i, key, eager[i], f"numerics='strict' promises "
                               f"eager's values; {differ} of {eager[i].numel()} elements differ")
        return verdict
    apart = rows_apart(programs, compiled, args, recipe)
    for i, rows in enumerate(apart):
        if rows:
            return _broken(verdict, i, keys[i], outputs["compiled"][i],
                           f"batch_invariant promises a row's result whatever its batch; rows "
                           f"{rows[:8]} differ bit for bit from the same rows computed alone")
    return verdict


def rows_apart(programs: Programs, compiled: Callable, args: list[torch.Tensor],
               recipe: Recipe) -> list[list[int]]:
    """Per output, the rows whose compiled bits in the batch differ from the same row computed
    alone (``rules.rows_apart``); [] where the promise does not apply: no batch of two rows, a
    program that writes its inputs, or one float64 says mixes rows."""
    batch = batch_positions(programs.graph, args)
    if not batch or programs.written or args[batch[0]].shape[0] < 2:
        return []
    rows = [[a[r:r + 1] if i in batch else a for i, a in enumerate(args)]
            for r in range(args[batch[0]].shape[0])]
    whole64 = rules.float64_run(lambda *wide: calling.call(programs.model, wide)[0], args)
    for r, row in enumerate(rows):
        alone64 = rules.float64_run(lambda *wide: calling.call(programs.model, wide)[0], row)
        if not all(w.dim() and torch.allclose(w[r:r + 1].double(), a.double(), rtol=1e-9,
                                              atol=0.0, equal_nan=True)
                   for w, a in zip(whole64, alone64)):
            return []  # a row's result depends on other rows: nothing is promised
    with inductor_config(recipe.config):
        whole = _compiled_run(compiled, args, programs.written, False)[0]
        alone = [_compiled_run(compiled, row, programs.written, False)[0] for row in rows]
    return rules.rows_apart(whole, alone)


def _broken(verdict: Verdict, output: int, key: int | tuple, value: torch.Tensor,
            reason: str) -> Verdict:
    node = key if isinstance(key, int) else key[1]
    out = OutputVerdict(output, node, Kind.PROMISE,
                               str(value.dtype).removeprefix("torch."), Details(reason=reason))
    return dataclasses.replace(verdict, kind=Kind.PROMISE, output=output, node=node,
                               outputs=[*verdict.outputs, out], message=reason)


# Inductor keeps fp16/bf16 values (and explicit round trips through them) in float32 inside its
# kernels by default, on purpose; this knob gives eager's rounding (known.toml's
# fused-low-precision-roundtrip, closed upstream as expected).
EMULATE = {"emulate_precision_casts": True}
LOW_PRECISION = ("float16", "bfloat16")
# Divergences of values, which a rounding can explain; a crash, a dtype change or an aliasing
# difference is never the round trip's.
BY_VALUE = (Kind.NONFINITE, Kind.INT_FLIP, Kind.HIDDEN_NONFINITE, Kind.ACCURACY)


def low_precision(graph: Graph) -> bool:
    """Does the graph hold a float16/bfloat16 value or a cast to one (``cast_roundtrip``, a
    captured ``x.to(torch.bfloat16)``)? Only there can ``EMULATE`` change what Inductor does."""
    def names(value: object) -> bool:
        if isinstance(value, dict):
            return any(names(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return any(names(v) for v in value)
        return isinstance(value, str) and value in LOW_PRECISION

    return any(n.dtype in LOW_PRECISION or names(n.attrs) for n in graph.nodes())


def expected_by_default(verdict: Verdict, graph: Graph, recipe: Recipe,
                        rerun: Callable[[Recipe], Verdict]) -> Verdict:
    """``verdict``, or the same as ``expected`` (counted, not a finding) when it is a value
    divergence of a graph holding an fp16/bf16 cast that vanishes once Inductor emulates eager's
    casts: ``rerun`` judges the same draw compiled afresh under ``EMULATE`` and must be judged
    (not a skip or a crash) without the same divergence key (``judge.key``). Only under the
    float64 policy (parity users take eager's rounding as their spec), only when the recipe
    does not set the knob itself (``--inductor-config emulate_precision_casts=false`` judges
    the default as it stands) and only where this torch has it."""
    if verdict.kind not in BY_VALUE or recipe.policy != "float64" \
            or any(k in recipe.config for k in EMULATE) or config.missing(EMULATE) \
            or not low_precision(graph):
        return verdict
    torch._dynamo.reset()
    try:
        again = rerun(recipe.with_knob(EMULATE).fresh())
    except Exception:  # the emulated run could not tell: the finding stands as judged
        return verdict
    finally:
        torch._dynamo.reset()
    if again.kind == Kind.SKIP or again.kind in (*RAISED, Kind.WORKER_KILL) \
            or same_divergence(verdict, again):
        return verdict
    return dataclasses.replace(
        verdict, kind=Kind.EXPECTED,
        message=f"{verdict.summary()}; it vanishes with emulate_precision_casts=True: Inductor "
                "keeps fp16/bf16 round trips in float32 by default, on purpose")


class _Ended(Exception):
    """A draw that ends before it is judged: its verdict (a skip, numfuzz's own error, a
    compiled failure) and the outputs it keeps."""

    def __init__(self, verdict: Verdict, outputs: dict | None = None) -> None:
        super().__init__(verdict.message)
        self.verdict, self.outputs = verdict, outputs or {}


@dataclass
class _Eager:
    """Eager's side of a draw: its outputs and state (``all``), what it did to its inputs,
    every node's eager value, the attention backends it ran and the elements that differ
    between its two runs."""

    all: list[torch.Tensor]
    did: Did
    values: dict
    sdpa: list[str]
    unstable: list[torch.Tensor | None]


@dataclass
class _Compiled:
    """Compiled's side: its outputs and state, what it did to its inputs, the elements that
    differ between its two runs or eager's, the written inputs a deployment keeps inside (not
    judged) and the values freezing made constants."""

    all: list[torch.Tensor]
    did: Did
    unstable: list[torch.Tensor | None]
    kept_inside: list[int]
    frozen: int | None


def run_draw(programs: Programs, compiled: Callable, args: list[torch.Tensor],
             recipe: Recipe) -> tuple[Verdict, dict]:
    """One draw's verdict and outputs. Eager runs twice and compiled runs twice, under the
    recipe's torch.backends flags (``flags.pin``), each on fresh copies of the inputs
    (``calling.call``: a program may write them); an element that differs between two runs of
    one side is never part of a finding (``oracle.steadied``). What is judged: the outputs,
    the state the call leaves in the inputs it writes, and (``oracle.with_aliasing``) which
    outputs share storage with which inputs and which inputs compiled changed. A training
    recipe runs forward and backward (``calling.forward_backward``); the gradients are judged
    after the rest, and the outputs judged are the training graph's. A program float64 cannot
    stand for (it reinterprets bits) is judged against eager, by the same rule, and says so."""
    flags.pin(recipe.flags)
    try:
        eager = _eager_side(programs, args, recipe)
        return _judged(programs, args, recipe, eager,
                       _compiled_side(programs, compiled, args, recipe, eager))
    except _Ended as ended:
        return ended.verdict, ended.outputs


def _eager_side(programs: Programs, args: list[torch.Tensor], recipe: Recipe) -> _Eager:
    """Eager twice (``_eager_runs``); a failure of eager's is a generator bug, never a finding,
    and a write the graph does not know is numfuzz's own error."""
    try:
        (eager_all, eager_did), again, eager_values, sdpa = _eager_runs(programs, args, recipe)
    except Exception as err:
        line = error_line(err)
        message = faults.oom_message(line) if faults.out_of_memory(line) \
            else f"eager failed: {line}"
        raise _Ended(Verdict(Kind.SKIP, message=message)) from None
    if eager_did[1]:
        raise _Ended(harness_error(f"eager changed input positions {list(eager_did[1])}, "
                                   "which the graph does not write"))
    try:
        unstable = oracle.run_to_run(eager_all, again)
    except ValueError:
        raise _Ended(Verdict(Kind.SKIP, message="eager's two runs differ in number, shape or "
                             "dtype of outputs on this input", sdpa=sdpa)) from None
    return _Eager(eager_all, eager_did, eager_values, sdpa, unstable)


def _compiled_side(programs: Programs, compiled: Callable, args: list[torch.Tensor],
                   recipe: Recipe, eager: _Eager) -> _Compiled:
    """Compiled twice under the recipe's Inductor config; a knob this torch lacks tested
    nothing (numfuzz's error), and a compiled run that raised is judged by
    ``compiled_failure`` (eager's outputs kept beside a finding)."""
    absent = config.missing(recipe.config)
    if absent:
        raise _Ended(harness_error(f"not in this torch: {', '.join(absent)}"))
    patched = inductor_config(recipe.config)  # refuses a knob outside the allowlist
    frozen = config.FrozenCount() if recipe.config.get("freezing") else None
    training = recipe.surface.training
    try:
        with patched, frozen or contextlib.nullcontext():
            out_all, compiled_did = _compiled_run(compiled, args, programs.written, training)
            second, _ = _compiled_run(compiled, args, programs.written, training)  # cheap
    except Exception as err:
        failure = compiled_failure(err, recipe, eager.sdpa)
        skipped = failure.kind == Kind.SKIP \
            and not failure.message.startswith(faults.OUT_OF_MEMORY)
        raise _Ended(failure, {} if skipped else {"eager": eager.all}) from None
    kept_inside = state_kept_inside(programs, recipe)
    for i in kept_inside:  # not handed back: not judged (eager's value stands in, said later)
        if i < len(out_all) and i < len(second):
            out_all[i], second[i] = eager.all[i].clone(), eager.all[i].clone()
    try:
        unstable = oracle.either(eager.unstable, oracle.run_to_run(out_all, second))
    except ValueError:
        raise _Ended(Verdict(Kind.SKIP, message="compiled's two runs differ in number, shape "
                             "or dtype of outputs on this input", sdpa=eager.sdpa)) from None
    count = frozen.count if frozen is not None else None
    return _Compiled(out_all, compiled_did, unstable, kept_inside, count)


def _judged(programs: Programs, args: list[torch.Tensor], recipe: Recipe, eager: _Eager,
            compiled: _Compiled) -> tuple[Verdict, dict]:
    """Both sides judged against float64 (or eager, where float64 cannot stand for the
    program: it reinterprets bits), with gradients or aliasing, and the notes a reader needs."""
    training = recipe.surface.training
    arity = len(semantics.judged(programs.graph))
    eager_stands = programs.nodewise and not semantics.float64_stands(programs.graph)
    unstable = compiled.unstable
    if eager_stands and not training and programs.bit_noise is not None:
        unstable = oracle.either(unstable, _moved_by_bit_noise(programs, args, eager.values))
    steady = oracle.steadied(eager.all, compiled.all, unstable)
    values, ref_all = _reference(programs, args, eager, eager_stands, training, arity)
    nudge = programs.nudged
    nudged = (lambda: nudge(args)) if nudge is not None and not eager_stands else None
    judged_eager = eager.all[:arity] if programs.nodewise else eager.all
    verdict = semantics.judge_graph(programs.graph, judged_eager,
                                    steady[:arity] if training else steady, values,
                                    eager.values, recipe.policy, nudged, eager_stands)
    if eager_stands:
        oracle.note_eager_reference(verdict, "a dtype view reinterprets bits, which float64 "
                                             "cannot stand for")
    if training:
        floats = [n for i, (n, t) in enumerate(zip(programs.graph.input_ids(), args))
                  if t.is_floating_point() and i not in programs.written]
        verdict = oracle.with_gradients(verdict, eager.all[arity:], steady[arity:],
                                        ref_all[arity:], floats)
    else:
        verdict = oracle.with_aliasing(verdict, semantics.aliasing_problems(
            programs.graph, eager.did, compiled.did))
    oracle.note_unstable(verdict, unstable)
    if programs.note:
        verdict.message = (verdict.message + "; " if verdict.message else "") + programs.note
    if compiled.kept_inside:
        verdict.message = (verdict.message + "; " if verdict.message else "") + \
            KEPT_INSIDE.format(len(compiled.kept_inside))
    verdict.sdpa = eager.sdpa
    verdict.frozen = compiled.frozen
    outputs = {"eager": [t.cpu() for t in eager.all],
               "compiled": [t.cpu() for t in compiled.all], "fp64": [t.cpu() for t in ref_all]}
    return verdict, outputs


def _reference(programs: Programs, args: list[torch.Tensor], eager: _Eager, eager_stands: bool,
               training: bool, arity: int) -> tuple[dict, list[torch.Tensor]]:
    """Every node's reference value and the judged ones (gradients after, when training):
    float64's, or eager's where it stands in; out of memory is a skip."""
    try:
        values = eager.values if eager_stands else rules.float64_run(programs.trace, args)
        ref_all = [values[k] for k in semantics.judged(programs.graph)]
        if training:
            ref_all += rules.float64_run(
                lambda *wide: calling.forward_backward(programs.model, wide, programs.written),
                args)[arity:]
    except torch.OutOfMemoryError as err:
        raise _Ended(Verdict(Kind.SKIP, message=faults.oom_message(error_line(err)),
                             sdpa=eager.sdpa)) from None
    return values, ref_all


KEPT_INSIDE = ("{} module buffers it writes are not judged: an AOTInductor package keeps the "
               "buffers it writes inside, as its constants, and hands none back")


def state_kept_inside(programs: Programs, recipe: Recipe) -> list[int]:
    """The positions, among what a run is judged on (``semantics.judged``), of the module
    buffers the program writes, where its path keeps them inside (an AOTInductor package):
    their value after the call is not the caller's to see, so it is not judged."""
    if recipe.surface.deployment.returns_state or not programs.kinds:
        return []
    arity = len(programs.graph.outputs)
    return [arity + k for k, position in enumerate(programs.written)
            if programs.kinds[position] != "x"]


Did = tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]  # calling.call: shares, touched


def _call(fn: Callable, args: list[torch.Tensor], written: list[int], training: bool
          ) -> tuple[list[torch.Tensor], Did]:
    """One call on fresh copies of ``args``: its outputs and written state (and gradients when
    training), and what it did to its inputs besides (``calling.call``)."""
    if training:
        return calling.forward_backward(fn, args, written), ((), ())
    return calling.call(fn, args, written)


def _eager_runs(programs: Programs, args: list[torch.Tensor], recipe: Recipe
                ) -> tuple[tuple[list[torch.Tensor], Did], list[torch.Tensor], dict, list[str]]:
    """Eager twice: its outputs and state (gradients too, when training) with what it did to
    its inputs, the second run's, every node's eager value (a generated graph's trace: the
    second run; what a head's evidence is measured against) and the attention backends the
    first run used; eager alone is pinned to the recipe's ``eager_sdpa``, if any."""
    training = recipe.surface.training
    arity = len(semantics.judged(programs.graph))
    pinned = recipe.flags.eager_sdpa if recipe.flags is not None else ""
    with flags.sdpa_pinned([pinned] if pinned else []):
        with flags.recording_sdpa() as seen:
            first = _call(programs.model, args, programs.written, training)
        if programs.nodewise:
            eager_values = programs.trace(*[rules.fresh(a) for a in args])
            again = [eager_values[k] for k in semantics.judged(programs.graph)]
        else:
            eager_values = dict(programs.eager_values)
            again = _call(programs.model, args, programs.written, False)[0]
        if training:
            again = [*again, *_call(programs.model, args, programs.written, True)[0][arity:]]
    _synchronize()  # an asynchronous CUDA error of eager's surfaces as eager's
    return first, again, eager_values, list(dict.fromkeys(seen))


def _moved_by_bit_noise(programs: Programs, args: list[torch.Tensor], eager_values: dict
                        ) -> list[torch.Tensor | None]:
    """Per judged value, the elements one step of rounding noise on the floats a dtype view
    reinterprets moves (``rules.moved_by_noise``): judged against eager, such an element's bits
    are no evidence, as an element that varies run to run is none (``oracle.steadied``)."""
    keys = semantics.judged(programs.graph)
    base = [eager_values[k] for k in keys]
    assert programs.bit_noise is not None  # called only where a view reinterprets bits
    runs = [[run[k] for k in keys] for run in programs.bit_noise(args)]
    tols = [oracle.TOLERANCE.get(str(b.dtype).removeprefix("torch."), 1e-4) for b in base]
    return rules.moved_by_noise(base, runs, tols)


def _compiled_run(compiled: Callable, args: list[torch.Tensor], written: list[int],
                  training: bool) -> tuple[list[torch.Tensor], Did]:
    """One run of the compiled program. Its outputs are cloned at once: under CUDA graphs
    (``reduce-overhead``) the next run overwrites them in place. A kernel's asynchronous CUDA
    error surfaces here, as this run's, not at some later call."""
    mark_step = getattr(torch.compiler, "cudagraph_mark_step_begin", None)
    if mark_step is not None:  # a new iteration: CUDA graphs may reuse the last one's memory
        mark_step()
    outputs, did = _call(compiled, args, written, training)
    outputs = [t.clone() for t in outputs]
    _synchronize()
    return outputs, did


def _synchronize() -> None:
    """Wait for the GPU, if this process uses one: CUDA reports a kernel's error at the next
    synchronizing call, which would otherwise be some later, innocent one."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()

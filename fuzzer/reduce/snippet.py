"""The plain reproducer a maintainer reads in ten seconds: about fifteen lines of torch that print
eager, compiled and float64 for the differing elements.

Beside the self-judging ``repro.py`` (``reduce.repro``: numfuzz's rules, bit-exact inputs, exit
status), a draft opens with this: the model as numfuzz rendered it, the inputs, the compile the
case recorded (``torch.compile(model)`` for Inductor; the backend, ``torch.compile`` arguments and
Inductor options otherwise), and one print per differing element. Inputs are literals when small
(``LITERAL_LIMIT``); a larger input is written as a seeded expression (``torch.randn`` scaled to
the input's magnitude, a ``linspace`` over its range, a constant), used only when that expression
still shows the divergence, checked by running it (``plain_repro``); else the snippet loads an
inputs file written beside it. Only torch is needed, and a ``module:function`` backend is imported
by name as ``repro.py`` does. What the snippet prints is read back here too
(``shows_divergence``), beside the code that prints it, so the two cannot drift apart.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from fuzzer.corpus.case import Case
from fuzzer.corpus.files import atomic_write
from fuzzer.device import Device
from fuzzer.execute.pool import TaskRunner
from fuzzer.execute.surface import deployment
from fuzzer.ir import render
from fuzzer.judge import semantics
from fuzzer.judge.key import focus, same_divergence
from fuzzer.judge.kinds import HEAP_ABORTS, RAISED, Kind, memory_class
from fuzzer.judge.verdict import Verdict
from fuzzer.reduce.repro import laid_out, tensor_expression

LITERAL_LIMIT = 8  # elements of one input written as literals; more: an expression or a file
SHOWN = 4  # differing elements printed
SEED = 0


@dataclass
class Plain:
    """A plain reproducer: its source, the case it runs (the case's own inputs, or the seeded
    ones it was checked with) and the inputs file it loads, if any."""

    source: str
    case: Case
    inputs_file: Path | None = None


# ------------------------------------------------------------------ values as Python


def literal(value: float | int | bool, dtype: torch.dtype) -> str:
    """The shortest text that reads back as exactly ``value`` in ``dtype``."""
    if isinstance(value, bool) or not dtype.is_floating_point:
        return repr(value)
    if math.isnan(value):
        return "torch.nan"
    if math.isinf(value):
        return "torch.inf" if value > 0 else "-torch.inf"
    if len(repr(value)) <= 10:  # exact and short already (65504.0, not 6.55e+04)
        return repr(value)
    for digits in range(1, 18):
        text = f"{value:.{digits}g}"
        if torch.tensor(float(text), dtype=dtype).item() == value and \
                math.copysign(1, float(text)) == math.copysign(1, value):
            return text if any(c in text for c in ".en") else text + ".0"
    return repr(value)


def _dtype_arg(t: torch.Tensor) -> str:
    default = torch.float32 if t.is_floating_point() else torch.int64
    return "" if t.dtype == default else f", dtype={t.dtype}"


def literal_tensor(t: torch.Tensor) -> str:
    """``torch.tensor([...])`` holding exactly ``t`` (its dtype named unless the default); a
    strided view as ``repro.py`` writes it."""
    if laid_out(t) and t.numel() > 1:
        return tensor_expression(t)
    if t.dim() == 0:
        return f"torch.tensor({literal(t.item(), t.dtype)}{_dtype_arg(t)})"
    values = ", ".join(literal(v, t.dtype) for v in t.reshape(-1).tolist())
    text = f"torch.tensor([{values}]{_dtype_arg(t)})"
    return text if t.dim() == 1 else f"{text}.reshape{tuple(t.shape)!r}"


def _round(value: float) -> float:
    """Two significant digits: a scale a person can read."""
    if value == 0 or not math.isfinite(value):
        return 1.0
    return float(f"{value:.2g}")


def seeded_forms(t: torch.Tensor) -> Iterator[str]:
    """Expressions (after ``torch.manual_seed(SEED)``) that build a tensor like ``t``: its shape
    and dtype, values of its magnitude. Whether one still diverges is checked by running it."""
    shape = ", ".join(str(s) for s in t.shape)
    cast = "" if t.dtype in (torch.float32, torch.int64) else f".to({t.dtype})"
    if t.dtype == torch.bool:
        yield f"torch.rand({shape}) < 0.5"
        return
    finite = t[torch.isfinite(t)] if t.is_floating_point() else t
    if not t.is_floating_point():
        least, most = (int(finite.min()), int(finite.max())) if finite.numel() else (0, 1)
        yield f"torch.randint({least}, {most + 1}, ({shape},)){cast}"
        return
    if finite.numel() == 0:
        return
    lo, hi = float(finite.min()), float(finite.max())
    scale = _round(float(finite.abs().max()))
    yield f"torch.randn({shape}).mul({scale!r}){cast}"
    yield f"torch.linspace({_round(lo) if lo else 0.0!r}, {_round(hi) if hi else 0.0!r}, " \
          f"{t.numel()}).reshape({shape}){cast}"
    yield f"torch.full(({shape},), {literal(float(finite.reshape(-1)[0]), t.dtype)}){cast}"


def evaluate(forms: dict[str, str]) -> dict[str, torch.Tensor]:
    """What the snippet's input lines compute, in its order, after its ``manual_seed``."""
    torch.manual_seed(SEED)
    return {name: eval(text, {"torch": torch}) for name, text in forms.items()}  # noqa: S307


# ------------------------------------------------------------------ the snippet


def snippet_source(case: Case, forms: dict[str, str], inputs_file: str | None = None) -> str:
    """The plain reproducer of ``case``: ``forms`` gives each input's expression (literal or
    seeded), or ``inputs_file`` names the file they are loaded from. A program whose weights
    were a module's parameters when it ran (``semantics.kinds``) is that module here too, run
    without gradients: freezing folds a module's parameters, never a function's arguments
    (``_module_run``)."""
    graph, verdict = case.graph, case.verdict
    names = [graph.var(n) for n in graph.input_ids()]
    body = render.render_function(graph)
    lines = ["import torch"]
    if "F." in body:
        lines.append("import torch.nn.functional as F")
    backend = _backend(case)
    if ":" in case.recipe.backend:
        module, _, attr = case.recipe.backend.partition(":")
        lines.append(f"from {module} import {attr}")
    lines += ["", body, ""]
    written = [graph.input_ids().index(n) for n in graph.written_inputs()]
    kinds = [] if case.recipe.surface.training else semantics.kinds(graph)
    if kinds and any(kinds[i] == "x" for i in written):
        kinds = []  # it writes its arguments: the function form, on copies (``_state_helper``)
    if kinds:
        lines += _module_lines(case, names, kinds)
        if _state_laid_out(case, kinds):
            lines += COPY_HELPER
    if case.recipe.surface.training:
        lines += _training_helper(written)
    elif written and not kinds and (verdict is None or verdict.kind != Kind.ALIASING):
        lines += _state_helper(written, any(map(laid_out, case.inputs.values())))
    lines += _input_lines(case, names, forms, inputs_file)
    # Inductor as every worker runs it (``runner.inductor_config``, the pt2 template): a
    # divergence may depend on it (RESULTS §23 C shows only with it).
    knobs = {**({"fallback_random": True} if case.recipe.backend == "inductor" else {}),
             **case.recipe.config}
    lines += [f"torch._inductor.config.{k} = {v!r}" for k, v in knobs.items()]
    if kinds:
        return "\n".join(lines + _module_run(case, names, kinds, written, backend)) + "\n"
    args = ", ".join(names)
    compiled = f"torch.compile({', '.join(['model', *backend])})"
    if case.recipe.surface.deployed:  # torch.export, and AOTInductor's package
        lines += _deployment_lines(case.recipe.surface.path, None, args)
        compiled = "deployed"
    elif graph.passed_views():  # the caller stays eager: the compiler sees aliased arguments
        lines.append(f"compiled_forward = torch.compile({', '.join(['forward', *backend])})")
        compiled = "partial(model, forward=compiled_forward)"
        lines.insert(1, "from functools import partial")
    if case.recipe.surface.automatic:  # automatic dynamic: a first call at another batch size
        compiled = "compiled_model"
        lines += [f"compiled_model = torch.compile({', '.join(['model', *backend])})",
                  *_first_call_elsewhere(case, names, kinds)]
    if verdict is not None and verdict.kind in RAISED:
        training = case.recipe.surface.training  # forward and backward, as the run that raised
        return "\n".join([*lines, *_raised(verdict, compiled, args, training=training)]) + "\n"
    if verdict is not None and verdict.kind == Kind.ALIASING:
        return "\n".join([*lines, *_aliasing_lines(compiled, args, names)]) + "\n"
    position = verdict.output if verdict is not None and verdict.output is not None else 0
    run = "outputs(model, {args})" if case.recipe.surface.training else \
        "call(model, {args})" if written else "model({args})"
    wide = ", ".join(f"{n}.double()" if case.inputs[str(i)].is_floating_point() else n
                     for n, i in zip(names, graph.input_ids()))
    lines += [f"eager = {run.format(args=args)}[{position}]",
              f"compiled = {run.replace('model', compiled, 1).format(args=args)}[{position}]"]
    if not semantics.float64_stands(graph):  # a dtype view: float64's bits are other bits
        return "\n".join(lines + _prints(verdict, float64=False)) + "\n"
    lines += ["torch.set_default_dtype(torch.float64)  # the float64 reference",
              f"ref = {run.format(args=wide)}[{position}]"]
    return "\n".join(lines + _prints(verdict)) + "\n"


def _state_laid_out(case: Case, kinds: list[str]) -> bool:
    """Is a parameter or buffer of the module form laid out (``repro.laid_out``)?"""
    return any(laid_out(case.inputs[str(i)])
               for i, k in zip(case.graph.input_ids(), kinds) if k != "x")


def _module_run(case: Case, names: list[str], kinds: list[str], written: list[int],
                backend: list[str]) -> list[str]:
    """The module form's runs: a module of its own per side (eager ``m``, compiled ``c``,
    float64 ``r``), each built from copies of the state, so what one call writes to a buffer
    reaches no other; what is judged is its outputs, then the buffers it writes, as the call
    left them (an AOTInductor package keeps those inside: only its outputs are shown)."""
    verdict = case.verdict
    state = [n for n, k in zip(names, kinds) if k != "x"]
    args = ", ".join(n for n, k in zip(names, kinds) if k == "x")
    after = [names[i] for i in written]
    copy = "copy({})" if _state_laid_out(case, kinds) else "{}.clone()"
    lines = ["torch.set_grad_enabled(False)  # inference, as freezing needs",
             f"m = Model({', '.join(copy.format(n) for n in state)})",
             f"c = Model({', '.join(copy.format(n) for n in state)})"]
    surface = case.recipe.surface
    holder: str | None  # None: an AOTInductor package keeps its buffers inside
    compiled, holder = f"torch.compile({', '.join(['c', *backend])})", "c"
    if surface.deployed:
        lines += _deployment_lines(surface.path, "c", args)
        compiled, holder = "deployed", "deployed" if surface.deployment.returns_state else None
    elif surface.automatic:
        lines += [f"compiled_model = torch.compile({', '.join(['c', *backend])})",
                  *_first_call_elsewhere(case, names, kinds)]
        compiled = "compiled_model"
    if verdict is not None and verdict.kind in RAISED:
        return [*lines, *_raised(verdict, compiled, args, "m")]
    if verdict is not None and verdict.kind == Kind.ALIASING:
        return [*lines, *_aliasing_lines(compiled, args, [n for n, k in zip(names, kinds)
                                                            if k == "x"])]
    position = verdict.output if verdict is not None and verdict.output is not None else 0

    def judged(module: str | None, call: str, given: str) -> str:
        left = "".join(f", {module}.{n}" for n in after) if module is not None else ""
        return f"[*{call}({given}){left}][{position}]"

    lines += [f"eager = {judged('m', 'm', args)}", f"compiled = {judged(holder, compiled, args)}"]
    if not semantics.float64_stands(case.graph):
        return lines + _prints(verdict, float64=False)
    wide = {n: f"{n}.double()" if case.inputs[str(i)].is_floating_point() else n
            for n, i in zip(names, case.graph.input_ids())}
    wide_args = ", ".join(wide[n] for n, k in zip(names, kinds) if k == "x")
    return lines + ["torch.set_default_dtype(torch.float64)  # the float64 reference",
                    f"r = Model({', '.join(wide[n] for n in state)})",
                    f"ref = {judged('r', 'r', wide_args)}", *_prints(verdict)]


def _deployment_lines(path: str, module: str | None, args: str) -> list[str]:
    """How a deployment builds what it runs (``surface.Deployment``): ``torch.export`` of the
    module (a function in a module of its own), its decompositions, then torch.compile of the
    exported program or, for a package, AOTInductor in a temporary folder (``calling.Deployed``
    does the same)."""
    how = deployment(path)
    lines = []
    if module is None:
        lines += ["class Wrap(torch.nn.Module):  # torch.export takes a module",
                  "    def forward(self, *xs):", "        return model(*xs)", ""]
        module = "Wrap()"
    lines.append(f"ep = torch.export.export({module}, ({args},))")
    if how.decomposes:
        lines.append("ep = ep.run_decompositions()")
    if how.builds == "export":
        return [*lines, "deployed = ep.module()"]
    if how.builds == "inductor":
        return [*lines, "deployed = torch.compile(ep.module())"]
    return [*lines, "import tempfile", "package = torch._inductor.aoti_compile_and_package(",
            "    ep, package_path=tempfile.mkdtemp() + '/model.pt2')",
            "deployed = torch._inductor.aoti_load_package(package)"]


def _module_lines(case: Case, names: list[str], kinds: list[str]) -> list[str]:
    """``Model``: the program as the module it ran as, its weights parameters (buffers); the
    parameters of a flat group views into one buffer, packed in input order."""
    state = [(n, k) for n, k in zip(names, kinds) if k != "x"]
    args = [n for n, k in zip(names, kinds) if k == "x"]
    shapes = {case.graph.var(n): tuple(case.graph.node(n).shape)
              for n in case.graph.input_ids()}
    init = []
    for group in dict.fromkeys(k for _, k in state if k.startswith("param:")):
        members = [n for n, k in state if k == group]
        init.append(f"        flat = torch.cat([{', '.join(f'{n}.reshape(-1)' for n in members)}"
                    "])  # one allocation for these weights")
        offset = 0
        for n in members:
            size = math.prod(shapes[n])
            init.append(f"        self.{n} = torch.nn.Parameter(flat[{offset}:{offset + size}]"
                        f".view{shapes[n]!r}, requires_grad=False)")
            offset += size
    init += [f"        self.{n} = torch.nn.Parameter({n}, requires_grad=False)" if k == "param"
             else f"        self.register_buffer({n!r}, {n})" for n, k in state
             if not k.startswith("param:")]
    call = ", ".join(n if k == "x" else f"self.{n}" for n, k in zip(names, kinds))
    return ["class Model(torch.nn.Module):  # the weights are its parameters, as numfuzz ran it",
            f"    def __init__(self, {', '.join(n for n, _ in state)}):",
            "        super().__init__()", *init, "",
            f"    def forward(self, {', '.join(args)}):",
            f"        return model({call})", ""]


def _first_call_elsewhere(case: Case, names: list[str], kinds: list[str]) -> list[str]:
    """Automatic dynamic's first call, a batch one row longer (``calling.grown``): the judged
    call after it runs the kernel recompiled with the batch symbolic."""
    from fuzzer.execute.runner import batch_positions

    batch = batch_positions(case.graph, case.ordered_inputs())
    grown = [f"torch.cat([{n}, {n}[:1]])" if i in batch else n for i, n in enumerate(names)
             if not kinds or kinds[i] == "x"]
    return [f"compiled_model({', '.join(grown)})  # first at another batch size: automatic "
            "dynamic recompiles the next call with that dim symbolic"]


def _backend(case: Case) -> list[str]:
    """``torch.compile`` arguments besides the model: none for plain Inductor."""
    recipe = case.recipe
    args = []
    if ":" in recipe.backend:
        args.append(f"backend={recipe.backend.partition(':')[2]}")
    elif recipe.backend != "inductor":
        args.append(f"backend={recipe.backend!r}")
    surface = recipe.surface.compile_kwargs()
    if surface.get("dynamic"):  # static is what one call compiles anyway
        args.append(f"dynamic={surface['dynamic']!r}")
    if surface.get("mode"):
        args.append(f"mode={surface['mode']!r}")
    return args


def _input_lines(case: Case, names: list[str], forms: dict[str, str],
                 inputs_file: str | None) -> list[str]:
    device = "" if Device(case.device).is_cpu else f".to({case.device!r})"
    if inputs_file is not None:
        return [f"{', '.join(names)}, = [t{device} for t in torch.load({inputs_file!r})]"
                f"  # the file beside this report"]
    seeded = any(not _is_literal(f) for f in forms.values())
    lines = [f"torch.manual_seed({SEED})"] if seeded else []
    return lines + [f"{name} = {forms[name]}{device}" for name in names]


def _is_literal(form: str) -> bool:
    return form.startswith("torch.tensor(")  # literal_tensor's forms, strided ones included


def _training_helper(written: list[int]) -> list[str]:
    """What a ``--training`` case is judged on: the outputs, the inputs it writes as the call
    left them, then the gradients of the sum of the float outputs with respect to each other
    float input (as ``calling.forward_backward``)."""
    keep = f" and i not in {written!r}" if written else ""
    state = f" + [xs[i].detach() for i in {written!r}]" if written else ""
    return ["def outputs(fn, *xs):  # the outputs, the inputs it writes, the gradients",
            "    xs = [x.detach().clone().requires_grad_(x.is_floating_point()"
            f"{keep}) for i, x in enumerate(xs)]",
            "    wrt = [x for x in xs if x.requires_grad]  # before the call, as numfuzz's",
            "    outs = list(fn(*xs))",
            "    reached = [o for o in outs if o.requires_grad]",
            "    grads = torch.autograd.grad(reached, wrt, [torch.ones_like(o) for o in reached], "
            "allow_unused=True) if reached and wrt else [None] * len(wrt)",
            f"    return [o.detach() for o in outs]{state} + "
            "[torch.zeros_like(w) if g is None else g for g, w in zip(grads, wrt)]", ""]


# A copy that keeps its tensor's layout (``rules.fresh``'s), where ``x.clone()`` would make a
# strided or offset tensor contiguous and lose what a cause may need (a frozen conv's bias at a
# stride of 2, a weight at an offset of one flat allocation: N24, N19).
COPY_HELPER = ["def copy(x):  # the same strides and storage offset, over a copy of the storage",
               "    return torch.empty(0, dtype=x.dtype, device=x.device).set_("
               "x.untyped_storage().clone(), x.storage_offset(), x.shape, x.stride())", ""]


def _state_helper(written: list[int], laid_out: bool = False) -> list[str]:
    """The program writes its inputs: each side runs on copies, and what it left in the ones
    it writes is judged after its outputs (as ``calling.call``). Where an input is laid out (its
    strides, or an offset in its storage, which a write may depend on: RESULTS §23 C), each
    copy keeps the layout over a copy of the storage, as ``rules.fresh`` does."""
    copy = COPY_HELPER if laid_out else []
    return [*copy,
            "def call(fn, *xs):  # on copies: the outputs, then the inputs it writes, after",
            f"    xs = [{'copy(x)' if laid_out else 'x.clone()'} for x in xs]",
            f"    return [*fn(*xs), *(xs[i] for i in {written!r})]", ""]


def _aliasing_lines(compiled: str, args: str, names: list[str]) -> list[str]:
    """Which outputs share storage with which inputs, eager against compiled: the same
    outputs in both, else a difference a caller who writes one of them sees."""
    return ["def shared(fn, *xs):  # per output, the inputs whose storage it shares",
            "    xs = [x.clone() for x in xs]",
            "    ptr = lambda t: t.untyped_storage().data_ptr()  # noqa: E731",
            f"    return [[n for n, x in zip({names!r}, xs) if ptr(o) == ptr(x)] "
            "for o in fn(*xs)]",
            "",
            f"print('eager:   ', shared(model, {args}))",
            f"print('compiled:', shared({compiled}, {args}))"]


def _raised(verdict: Verdict, compiled: str, args: str, model: str = "model",
            training: bool = False) -> list[str]:
    """The call that fails. A memory-unsafe kernel usually returns and corrupts the heap:
    freeing its output is where glibc notices, so the snippet frees it and says when it did
    not (``shows_divergence`` reads that line). A training case runs forward and backward
    (``_training_helper``'s ``outputs``): the backward is often where it raised."""
    if training:
        model, compiled, args = f"outputs({model}, {args})", f"outputs({compiled}, {args})", ""
        call = "{}"
    else:
        call = "{}({})"
    first = (verdict.message.splitlines() or [""])[0][:80]
    if verdict.kind == Kind.MEMORY:
        noticed = memory_class(verdict.message)
        return [f"{call.format(model, args)}  # eager runs",
                f"out = {call.format(compiled, args)}  # the compiled kernel: {noticed} "
                f"({first})",
                "del out  # freeing its output is where glibc notices the corruption",
                f"print({NO_ABORT!r})"]
    what = "hangs" if verdict.kind == Kind.TIMEOUT else f"raises {first}"
    return [f"{call.format(model, args)}  # eager runs", f"{call.format(compiled, args)}  # {what}"]


NO_ABORT = "no abort: the corruption went unnoticed in this run"


def _prints(verdict: Verdict | None, float64: bool = True) -> list[str]:
    """The differing elements (or the largest error), eager beside compiled and, where float64
    stands for the program (``float64``), beside float64's ``ref``; a program that reinterprets
    bits is judged against eager alone, and the snippet says so."""
    out = verdict.diverging if verdict is not None else None
    elements = out.details.elements if out is not None else []
    indices = [tuple(e.index) for e in elements[:SHOWN]]
    if out is not None and out.kind == Kind.META:
        return ["print('eager', eager.shape, eager.dtype, 'compiled', compiled.shape, "
                "compiled.dtype)"]
    note = [] if float64 else \
        ["# judged against eager: a dtype view reinterprets bits, which float64 cannot stand for"]
    if not indices and float64:
        return ["err = lambda t: (t.double() - ref).abs().max().item()",
                "print('max |eager - float64|', err(eager), "
                "'max |compiled - float64|', err(compiled))"]
    if not indices:
        return [*note, "print('max |compiled - eager|', "
                       "(compiled.double() - eager.double()).abs().max().item())"]
    third = ", 'float64', ref[i].item()" if float64 else ""
    return [*note, f"for i in {indices!r}:",
            f"    print(i, 'eager', eager[i].item(), 'compiled', compiled[i].item(){third})"]


def shows_divergence(case: Case, output: str) -> bool:
    """Does what a plain reproducer printed show the divergence (read in each form ``_prints``,
    ``_aliasing_lines`` and ``_raised`` write, and only here): compiled differing from eager
    on a printed element, a larger error vs float64, or the recorded error raised?"""
    v = case.verdict
    if v is not None and v.kind == Kind.MEMORY:  # glibc's abort, or a signal, not our print
        return NO_ABORT not in output and (any(m in output for m in HEAP_ABORTS) or any(
            word in output for word in ("SIGSEGV", "SIGBUS", "Segmentation fault",
                                        "illegal memory access")))
    if v is not None and v.kind in RAISED:
        return v.kind == Kind.TIMEOUT or _error_type(v.message) in output
    shared = dict(re.findall(r"^(eager|compiled): +(.*)$", output, re.MULTILINE))
    if len(shared) == 2:  # which inputs each output shares storage with (_aliasing_lines)
        return shared["eager"] != shared["compiled"]
    # an element, beside float64 or (a program that reinterprets bits) eager alone
    if any(eager != compiled for eager, compiled in printed_elements(output).values()):
        return True
    for line in output.splitlines():
        if m := re.search(r"float64\| (\S+) max \|compiled - float64\| (\S+)", line):
            return float(m.group(2)) > float(m.group(1))
        elif m := re.search(r"^max \|compiled - eager\| (\S+)$", line):
            return float(m.group(1)) != 0  # nan too: compiled non-finite where eager is not
        elif m := re.search(r"^eager (.+) compiled (.+)$", line):
            return m.group(1) != m.group(2)
    return False


def printed_elements(output: str) -> dict[tuple[int, ...], tuple[str, str]]:
    """What a plain reproducer printed per element (``_prints``' form): index → (eager,
    compiled) as printed; the one reader of that form (``shows_divergence``, a draft's table
    check)."""
    found = {}
    for m in re.finditer(r"^\(([-\d, ]*)\) eager (\S+) compiled (\S+)", output, re.MULTILINE):
        index = tuple(int(i) for i in m.group(1).split(",") if i.strip())
        found[index] = (m.group(2), m.group(3))
    return found


def _error_type(message: str) -> str:
    return message.split(":", 1)[0].strip()


# ------------------------------------------------------------------ choosing the inputs


def plain_repro(case: Case, runner: TaskRunner | None, out_dir: Path, stem: str) -> Plain:
    """The plain reproducer of ``case``: literals when every input is small; else the first
    seeded form whose run on ``runner`` shows the same divergence (its differing elements are
    the ones printed); else the inputs saved to ``out_dir/<stem>.inputs.pt``."""
    names = {case.graph.var(n): str(n) for n in case.graph.input_ids()}
    big = {name for name, key in names.items() if case.inputs[key].numel() > LITERAL_LIMIT}
    literals = {name: literal_tensor(case.inputs[key]) for name, key in names.items()
                if name not in big}
    if not big:
        return Plain(snippet_source(case, literals), case)
    if runner is not None and (case.verdict is None or case.verdict.kind != Kind.TIMEOUT):
        for forms in _seeded(case, names, big):
            tried = _checked(case, {**literals, **forms}, names, runner.run)
            if tried is not None:
                return Plain(snippet_source(tried, {**literals, **forms}), tried)
    path = out_dir / f"{stem}.inputs.pt"
    buf = io.BytesIO()
    torch.save([t.cpu() for t in case.ordered_inputs()], buf)
    atomic_write(path, buf.getvalue())
    return Plain(snippet_source(case, {}, path.name), case, path)


def _seeded(case: Case, names: dict[str, str], big: set[str]) -> Iterator[dict[str, str]]:
    """One family of seeded forms at a time (every large input a randn, then a linspace …)."""
    per_input = {name: list(seeded_forms(case.inputs[names[name]])) for name in big}
    for i in range(max(len(f) for f in per_input.values())):
        if all(len(forms) > i for forms in per_input.values()):
            yield {name: forms[i] for name, forms in per_input.items()}


def _checked(case: Case, forms: dict[str, str], names: dict[str, str],
             run: Callable) -> Case | None:
    """``case`` on the inputs ``forms`` build, if that still shows its divergence."""
    built = evaluate({name: forms[name] for name in names})  # the snippet's own order
    inputs = {names[name]: t for name, t in built.items()}
    if any(t.shape != case.inputs[k].shape or t.dtype != case.inputs[k].dtype
           for k, t in inputs.items()):
        return None
    candidate = replace(case, inputs=inputs, verdict=None)
    verdict = run(candidate.task()).verdict
    target = case.verdict
    if target is None or not same_divergence(target, verdict):  # no divergence to show
        return None
    # A memory-unsafe kernel may abort in glibc one run and segfault the next: what the case
    # recorded says what it is; the values do not matter.
    candidate.verdict = target if verdict.kind == Kind.MEMORY else focus(target, verdict)
    return candidate

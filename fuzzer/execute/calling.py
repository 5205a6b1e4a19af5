"""The run harness, written once: how numfuzz and a repro alike run a generated program, eager
or compiled, on every surface it deploys to.

A program's inputs marked as state become a module's parameters and buffers (``Module``,
``packed``, ``module_program``); ``compile_model`` compiles it as the recipe says;
``Deployed`` runs it through ``torch.export`` and AOTInductor (``exporting``; what export
documents as unsupported is a refusal, ``ExportRefused``, not a finding); ``call`` runs it on
fresh copies of its inputs and records which outputs share storage with them; ``grown`` makes
automatic dynamic's first call; ``forward_backward`` is what a training run is judged on.

``repro.py`` embeds this file's code verbatim after the judge's rules (``embedded_source``;
``judge.rules.fresh`` and ``same_bits`` are defined there), so a repro runs a program exactly
as numfuzz did. Plain torch only: a repro must run with nothing but torch installed.
"""

from collections.abc import Callable, Sequence  # local annotations only: a repro needs neither

import torch

from fuzzer.judge.rules import fresh, same_bits

EMBEDDED = "# ---------------- the run harness (fuzzer/execute/calling.py), verbatim"


class Module(torch.nn.Module):
    """A program whose inputs marked ``param`` or ``buffer`` (``kinds``, one per input; ``x``
    for an argument) are a module's parameters and buffers: ``forward`` takes the arguments and
    calls the program with them and its state in input order. Parameters compiled as module
    attributes are what freezing folds into constants. Parameters marked ``param:<group>`` are
    views into one flat buffer per group, packed in input order (weights loaded into one
    allocation), each holding its given values."""

    def __init__(self, fn, kinds, state, written=()):
        super().__init__()
        self.fn, self.kinds = fn, list(kinds)
        # the buffers a call may change: the only ones a package needs handed in again
        self.written_names = {f"s{i}" for i in written if self.kinds[i] != "x"}
        values = dict(zip([i for i, k in enumerate(self.kinds) if k != "x"], state))
        for i, value in packed(self.kinds, values).items():
            values[i] = value
        for i, kind in enumerate(self.kinds):
            if kind.startswith("param"):
                setattr(self, f"s{i}", torch.nn.Parameter(values[i], requires_grad=False))
            elif kind == "buffer":
                self.register_buffer(f"s{i}", values[i])

    def forward(self, *args):
        it = iter(args)
        return self.fn(*[next(it) if kind == "x" else getattr(self, f"s{i}")
                         for i, kind in enumerate(self.kinds)])


def packed(kinds, values):
    """The parameters of each flat group (``param:<group>``) as views into one buffer of their
    dtype, packed in input order, holding ``values``' values: {position: view}."""
    groups: dict[str, list[int]] = {}
    for i, kind in enumerate(kinds):
        if kind.startswith("param:"):
            groups.setdefault(kind, []).append(i)
    views = {}
    for members in groups.values():
        first = values[members[0]]
        flat = torch.empty(sum(values[i].numel() for i in members), dtype=first.dtype,
                           device=first.device)
        offset = 0
        for i in members:
            view = flat[offset:offset + values[i].numel()].view(values[i].shape)
            view.copy_(values[i])
            views[i] = view
            offset += values[i].numel()
    return views


def module_program(fn, kinds, written=(), compile=None):
    """``fn`` as a ``Module`` (``kinds``: per input ``x``, ``param`` or ``buffer``), run as a
    program over every input: built on the first call from its state inputs (their layouts
    kept) and compiled then by ``compile`` if given; before each call the state inputs are
    copied into its parameters and buffers (each run starts from the values given); it runs
    under ``no_grad`` (an inference, which freezing needs); after it the buffers at positions
    ``written`` are copied back into the given tensors, where ``call`` reads what a run left."""
    built: dict[str, Callable[..., object]] = {}

    def program(*inputs):
        with torch.no_grad():
            if not built:
                built["module"] = Module(fn, kinds, [fresh(t) for t, kind in zip(inputs, kinds)
                                                     if kind != "x"], written)
                built["target"] = compile(built["module"]) if compile else built["module"]
            module = built["module"]
            for i, kind in enumerate(kinds):
                if kind != "x":
                    getattr(module, f"s{i}").copy_(inputs[i])
            outputs = built["target"](*[t for t, kind in zip(inputs, kinds) if kind == "x"])
            for i in written:
                if kinds[i] != "x":
                    inputs[i].copy_(getattr(module, f"s{i}"))
        return outputs

    return program


def compile_model(model, compile):
    """``model`` compiled by ``compile``. A model that passes views of its inputs beside them
    (rendered with a ``forward=`` keyword, ``render.render_function``) keeps its caller eager
    and has ``forward`` compiled: the compiler must see the aliased arguments."""
    forward = (getattr(model, "__kwdefaults__", None) or {}).get("forward")
    if forward is None:
        return compile(model)
    compiled = compile(forward)
    return lambda *inputs: model(*inputs, forward=compiled)


# What torch.export raises where it declines a program (a documented limitation: data-dependent
# control flow, an op it does not trace): a skip, never a finding.
REFUSALS = ("UserError", "Unsupported", "GuardOnDataDependentSymNode",
            "ConstraintViolationError", "DataDependentOutputException",
            "UnsupportedOperatorException")


class ExportRefused(Exception):
    """torch.export declined the program (``REFUSALS``)."""


# torch.export does not take inputs (arguments, the module's buffers) that share storage when
# the program writes one of them (it traces each input as its own); on torch 2.15 export or its
# run_decompositions fails with an assertion ("expected compiled_fn to be GraphModule") or a
# fake-tensor error instead of saying so (PR #174530 would say so; not merged). Told by its
# mechanism, the aliasing, not by the message.
ALIASED_ARGUMENTS = "arguments that share storage (export does not take aliased inputs it writes)"


def share_storage(args) -> bool:
    """Do two of the tensors share one storage (a view of another, or one twice)?"""
    seen = set()
    for arg in args:
        if isinstance(arg, torch.Tensor):
            base = arg.untyped_storage().data_ptr()
            if base == 0:  # an empty tensor holds no memory to share
                continue
            if base in seen:
                return True
            seen.add(base)
    return False


def exporting(module, args, decompose: bool = False):
    """``torch.export.export(module, args)``, and with ``decompose`` its ``run_decompositions()``
    (which traces again); their refusals raised as ``ExportRefused``, a failure on inputs that
    share storage too (``ALIASED_ARGUMENTS``)."""
    try:
        ep = refusing(torch.export.export, module, tuple(args))
        return refusing(ep.run_decompositions) if decompose else ep
    except ExportRefused:
        raise
    except Exception as err:
        held = [*module.buffers(), *module.parameters()] if isinstance(module, torch.nn.Module) \
            else []
        if share_storage([*args, *held]):  # an argument and a buffer alias alike
            first = (str(err).strip().splitlines() or [""])[0][:160]
            raise ExportRefused(f"{ALIASED_ARGUMENTS}: {type(err).__name__}: {first}") from err
        raise


def refusing(fn, *args):
    """``fn(*args)``, with torch.export's refusals (``REFUSALS``) raised as ``ExportRefused``."""
    try:
        return fn(*args)
    except Exception as err:
        if type(err).__name__ in REFUSALS:
            first = (str(err).strip().splitlines() or [""])[0][:200]
            raise ExportRefused(f"{type(err).__name__}: {first}") from err
        raise


class Forward(torch.nn.Module):
    """A function as the module torch.export needs."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


class Deployed:
    """``program`` (a module, or a function) as a deployment path runs it (``how``: plain data,
    ``surface.Deployment.how``), built at its first call from that call's arguments: exported
    (``builds`` "export": ``ExportedProgram.module()``), with its decompositions run first
    where ``decomposes``, then compiled by Inductor (``inductor``: the same graph through
    torch.compile) or by AOTInductor into a package in a temporary folder, loaded
    (``package``). ``hook(program, args, stage)`` stands in for the stage's product (a test
    double; None: torch's own). Before each call the module's buffers are handed to what runs
    it, and after it they come back where the path hands them back (``returns_state``: an
    exported module does; an AOTInductor package keeps the buffers it writes)."""

    def __init__(self, program, how, hook=None):
        self.module = program if isinstance(program, torch.nn.Module) else Forward(program)
        self.how, self.hook = how, hook
        self.target = self.holder = self.folder = None

    @property
    def returns_state(self):
        return self.how["returns_state"]

    def __call__(self, *args):
        if self.target is None:
            self.target, self.holder = self._build(args)
        self._hand_in()
        out = self.target(*args)
        if self.returns_state and isinstance(self.holder, torch.nn.Module):
            own = dict(self.holder.named_buffers())
            for name, buffer in self.module.named_buffers():
                if name in own:
                    buffer.copy_(own[name])
        return out

    def _build(self, args):
        ep = exporting(self.module, args, decompose=self.how["decomposes"])
        builds = self.how["builds"]
        if self.hook is not None:  # a test double stands in for the stage's product
            exported = ep.module()
            made = refusing(self.hook, exported, args, self.how["hook_stage"])
            return made, None if builds == "package" else exported
        if builds in ("export", "inductor"):  # the buffers live in the exported module
            exported = ep.module()
            return (torch.compile(exported) if builds == "inductor" else exported), exported
        import os
        import tempfile

        self.folder = tempfile.TemporaryDirectory(prefix="numfuzz-aoti-")
        package = torch._inductor.aoti_compile_and_package(
            ep, package_path=os.path.join(self.folder.name, "model.pt2"))
        loaded = torch._inductor.aoti_load_package(package)
        return loaded, loaded

    def _hand_in(self):
        """The module's buffers as this call starts with them, into what runs it."""
        buffers = dict(self.module.named_buffers())
        if isinstance(self.holder, torch.nn.Module):
            for name, buffer in self.holder.named_buffers():
                if name in buffers:
                    buffer.copy_(buffers[name])
        elif self.holder is not None and hasattr(self.holder, "load_constants"):
            # a package's buffers it may write: only those (``written_names``, where the module
            # says), since the package was built holding the others' values already, and
            # handing a strided buffer back in changed what a package computed (FINDINGS N22)
            writes = getattr(self.module, "written_names", None)
            names = [n for n in self.holder.get_constant_fqns() if n in buffers
                     and (writes is None or n in writes)]
            if names:
                self.holder.load_constants({n: buffers[n] for n in names},
                                           check_full_update=False)


def call(fn, inputs, written=()):
    """What one call computes: ``fn``'s outputs on fresh copies of ``inputs`` (``fresh``), then
    the inputs at positions ``written`` as the call left them: the state it mutated. Also what
    it did to its inputs besides: per output, the positions of the inputs it shares storage
    with (a view of an input, or the input itself), and the positions of the inputs it changed
    that are not ``written``."""
    copies = [fresh(t) for t in inputs]
    out = fn(*copies)
    outputs = list(out) if isinstance(out, (tuple, list)) else [out]
    storage = [c.untyped_storage().data_ptr() if c.numel() else None for c in copies]
    shares = tuple(tuple(i for i, s in enumerate(storage) if s is not None and o.numel()
                         and o.untyped_storage().data_ptr() == s) for o in outputs)
    touched = tuple(i for i, (c, t) in enumerate(zip(copies, inputs))
                    if i not in written and not same_bits(c, t))
    return outputs + [copies[i] for i in written], (shares, touched)


def grown(inputs, batch):
    """Automatic dynamic's first call: each input at a position in ``batch`` one row longer in
    its first dim (its first row repeated; a row of ones where it is empty), the rest as they
    are. The call after it, at the size the case records, recompiles with that dim symbolic."""
    out = []
    for i, t in enumerate(inputs):
        if i in batch:
            row = t[:1] if t.shape[0] else torch.ones((1, *t.shape[1:]), dtype=t.dtype,
                                                      device=t.device)
            t = torch.cat([t, row])
        out.append(t)
    return out


def forward_backward(fn, inputs, written=()):
    """What a training run is judged on: ``fn``'s outputs, the inputs at positions ``written``
    as the call left them, then the gradient of the sum of its float outputs with respect to
    each float input it does not write, in order (weights are inputs too; zeros where an input
    does not reach them). The inputs are fresh copies with their layouts (``fresh``)."""
    leaves = [fresh(t).requires_grad_(t.is_floating_point() and i not in written)
              for i, t in enumerate(inputs)]
    wrt = [t for t in leaves if t.requires_grad]  # before the call: a write may make one so
    outputs = list(fn(*leaves))
    reached = [o for o in outputs if o.requires_grad]
    grads: Sequence[torch.Tensor | None] = [None] * len(wrt)
    if reached and wrt:
        grads = torch.autograd.grad(reached, wrt, [torch.ones_like(o) for o in reached],
                                    allow_unused=True)
    return [o.detach() for o in outputs] + [leaves[i].detach() for i in written] + \
        [torch.zeros_like(w) if g is None else g for g, w in zip(grads, wrt)]


def embedded_source() -> str:
    """This module's harness as source text, for a repro to carry (everything below
    ``EMBEDDED``: the names it imports are in the judge's rules, embedded before it)."""
    import inspect
    import sys

    text = inspect.getsource(sys.modules[__name__])
    body = text.split("\nEMBEDDED = ", 1)[1].split("\n", 1)[1]
    return body.split("\ndef embedded_source", 1)[0].strip() + "\n"

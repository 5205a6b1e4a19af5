"""Standalone ``repro.py`` files: the model exactly as numfuzz ran it, inputs bit-exact, torch only.

The function is ``render.render_function`` of the case's graph, the same text the workers executed,
under the torch.backends flags they pinned (TF32, reduced-precision reductions) and on the attention
backends eager ran (``SDPA``).
Small inputs are written inline as exact Python float literals (``repr`` round-trips every float64,
and every float32/bfloat16/float16 value is one); larger ones go to an adjacent ``inputs.pt``. The
script runs eager, compiled and float64, judges the output with the oracle's own rules
(``fuzzer.judge.rules``, embedded verbatim) against the case's divergence key, prints the
differing elements, and exits 1 when the divergence reproduces, 0 when it does not and 2 when it
could not run, so it can drive ``compiler_bisector run``.
"""

from __future__ import annotations

import inspect
import io
import math
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from fuzzer.corpus.case import Case, CaseError
from fuzzer.corpus.files import atomic_write
from fuzzer.device import Device
from fuzzer.execute import calling, memcheck
from fuzzer.execute.flags import SDPA_BACKENDS
from fuzzer.execute.workers import WORKER_THREADS
from fuzzer.ir import render
from fuzzer.ir.graph import Graph
from fuzzer.ir.ops import Boundary
from fuzzer.judge import rules, semantics
from fuzzer.judge.details import Details
from fuzzer.judge.key import DivergenceKey
from fuzzer.judge.oracle import TOLERANCE
from fuzzer.judge.verdict import Verdict
from fuzzer.reduce import repro_main

INLINE_LIMIT = 256  # input elements written into the file; more go to inputs.pt
TIMEOUT = 300  # seconds before a timeout case counts as reproduced (the workers' default)

def _literal(value: float | int | bool) -> str:
    """``value`` as Python that needs only ``torch``: the plain snippet borrows
    ``tensor_expression`` for a laid-out input and defines no ``nan`` of its own."""
    if isinstance(value, bool) or isinstance(value, int):
        return repr(value)
    if math.isnan(value):
        return "torch.nan"
    if math.isinf(value):
        return "torch.inf" if value > 0 else "-torch.inf"
    return repr(value)


def _tensor_source(name: str, t: torch.Tensor) -> str:
    """``name = <t>`` as Python (``tensor_expression``)."""
    return f"    {name} = {tensor_expression(t)}"


def laid_out(t: torch.Tensor) -> bool:
    """Is ``t`` stored other than contiguously from the start of its storage (strides or an
    offset a program, or the compiler, may depend on)? Strides are compared exactly, those of
    size-1 dimensions too, which ``is_contiguous`` ignores and the compiler does not (a shape
    (1,) input of stride 2 crashed AOTAutograd on 2.11 where stride 1 did not)."""
    canonical = torch.empty(t.shape, device="meta").stride()
    # bool(): newer torch stubs type the comparison as a SymBool
    return bool(tuple(t.stride()) != tuple(canonical) or t.storage_offset() != 0)


def tensor_expression(t: torch.Tensor) -> str:
    """``t`` as a Python expression: values, dtype, shape and, for a strided view (a transpose,
    a slice, an expand) or one at an offset in its storage, the same strides and offset over a
    storage holding the elements up to the last it spans (the gaps as they are)."""
    dtype = str(t.dtype)
    offset = t.storage_offset()
    if not laid_out(t) or t.numel() == 0 or min(t.stride()) < 0:
        text = f"torch.tensor([{_values(t.reshape(-1))}], dtype={dtype})"
        if t.dim() != 1:
            text += f".reshape({tuple(t.shape)!r})"
        return text
    span = 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    storage = t.as_strided((offset + span,), (1,), 0)
    return (f"torch.tensor([{_values(storage)}], dtype={dtype})"
            f".as_strided({tuple(t.shape)!r}, {tuple(t.stride())!r}, {offset})")


def _values(flat: torch.Tensor) -> str:
    return ", ".join(_literal(v) for v in flat.tolist())


def _inputs_source(case: Case, out_dir: Path) -> str:
    names = [case.graph.var(n) for n in case.graph.input_ids()]
    tensors = case.ordered_inputs()
    lines = ["def get_inputs():"]
    if sum(t.numel() for t in tensors) <= INLINE_LIMIT:
        lines += [_tensor_source(n, t) for n, t in zip(names, tensors)]
        lines.append(f"    return [fresh(t, DEVICE) for t in ({', '.join(names)},)]")
    else:
        buf = io.BytesIO()
        torch.save([t.cpu() for t in tensors], buf)
        atomic_write(out_dir / "inputs.pt", buf.getvalue())
        lines += ["    here = os.path.dirname(os.path.abspath(__file__))",
                  "    path = os.path.join(here, 'inputs.pt')",
                  "    return [fresh(t, DEVICE) for t in torch.load(path, weights_only=True)]"]
    return "\n".join(lines)


@dataclass(frozen=True)
class ReproSpec:
    """Every constant a ``repro.py`` holds, typed, under the names ``repro_main`` reads them
    by: written in one place (``source``), and the placeholders above ``repro_main``'s embedded
    part are these names (``tests/test_minimize.py`` checks that they agree)."""

    DEVICE: str
    KEY: dict  # the divergence it reproduces
    OUTPUT: int
    PLACE: str  # what OUTPUT indexes
    TOL: float
    TIMEOUT: int
    UNDEFINED: list[int] | None  # flat indices never compared (see numfuzz)
    ORDINAL: bool
    HEAD: dict | str | None
    PARITY: bool  # every discrete mismatch with eager is a finding (--policy parity)
    FLOAT64: bool  # can a float64 run stand for it (not where it reinterprets bits)
    FLOOR: float  # eager's least noise, in ulps (where eager is the reference)
    BIT_NOISE: object  # the trace's key of OUTPUT where a dtype view reinterprets floats
    NOISE_TOL: float  # OUTPUT's own tolerance
    NODE: object  # the graph node OUTPUT reads
    WRITTEN: list[int]  # the inputs the program writes: judged after the call
    NAMES: list[str]
    KINDS: list[str]  # the module's parameters and buffers, per input (else a function)
    NUDGED: bool  # is its code's stability under noise measured
    SIGNS: bool  # does the program define its zeros' sign
    SIGNLESS: list[int] | None  # flat indices whose zero sign it does not
    SELECT: dict | None  # an index output: what judges it
    NAMES_OF: dict  # every node's Python name
    COMPILE: dict  # torch.compile's arguments
    DEPLOYMENT: dict | None  # a deployment path's build (None: torch.compile)
    GROWN: object  # the batch's inputs (automatic dynamic, batch_invariant)
    PROMISE: str  # what the surface promises exactly, if anything
    MALLOC_CHECK: dict  # glibc's malloc checking
    THREADS: int  # torch's intra-op threads, as numfuzz's workers ran it
    TRAINING: bool  # outputs, then the gradients of their sum
    SDPA: list[str] | None  # the attention backends eager ran (None: torch chooses)
    COMPILED_SDPA: list[str] | None  # pinned while compiled traces and runs

    def source(self) -> str:
        """The constants as a repro states them, one per line."""
        return "\n".join(f"{f.name} = {getattr(self, f.name)!r}" for f in fields(self))


def spec_of(case: Case, output: int, values: dict, select: dict | None) -> ReproSpec:
    """The repro's constants for ``case``'s divergence on ``output`` (``values``: every node's
    float64 value, where the judge needs them)."""
    verdict = case.verdict
    assert verdict is not None  # repro_source checks first
    surface, stands = case.recipe.surface, semantics.float64_stands(case.graph)
    signs = _zero_signs(case, output, values)
    eager_sdpa, compiled_sdpa = _sdpa(case)
    return ReproSpec(
        DEVICE=case.device, KEY=DivergenceKey.of(verdict).to_dict(), OUTPUT=output,
        PLACE=_place(case, verdict), TOL=TOLERANCE.get(case.dtype, 1e-4), TIMEOUT=TIMEOUT,
        UNDEFINED=_undefined(case, output, values), ORDINAL=_ordinal(case, output),
        HEAD=_head(case, output), PARITY=case.recipe.policy == "parity", FLOAT64=stands,
        FLOOR=0.0 if stands else rules.EAGER_NOISE_FLOOR,
        BIT_NOISE=_bit_noise_key(case, output, stands),
        NOISE_TOL=TOLERANCE.get(_output_dtype(verdict), 1e-4), NODE=_node(case, output),
        WRITTEN=_written(case), NAMES=[case.graph.var(n) for n in case.graph.input_ids()],
        KINDS=_kinds(case), NUDGED=_nudged(case, output), SIGNS=signs is not False,
        SIGNLESS=_signless(signs), SELECT=select, NAMES_OF=_names_of(case),
        COMPILE=surface.compile_kwargs(),
        DEPLOYMENT=surface.deployment.how() if surface.deployed else None,
        GROWN=_grown(case), PROMISE=surface.promise, MALLOC_CHECK=memcheck_environment(),
        THREADS=WORKER_THREADS, TRAINING=surface.training, SDPA=eager_sdpa,
        COMPILED_SDPA=compiled_sdpa)


def repro_source(case: Case, out_dir: Path) -> str:
    verdict = case.verdict
    if verdict is None or not verdict.is_finding:
        raise CaseError("the case records no divergence to reproduce")
    output = verdict.output if verdict.output is not None else 0
    # every node's reference value, once (none to compute for a gradient output)
    values = _float64_values(case) if _node(case, output) is not None else {}
    select, select_source = _select(case, output, values)
    spec = spec_of(case, output, values, select)
    config = "".join(f"    torch._inductor.config.{k} = {v!r}\n"
                     for k, v in case.recipe.config.items())
    imports, backend = _backend_source(case)
    parts = [
        _header(case) + imports + render.HEADER.rstrip(),
        render.render_function(case.graph),
        "# What numfuzz judged, and how (fuzzer/reduce/repro.py, ReproSpec).\n" + spec.source(),
        _inputs_source(case, out_dir),
        "# The rules numfuzz judged with (fuzzer/judge/rules.py), verbatim.\n"
        + rules.embedded_source().rstrip(),
        "# How numfuzz ran the program (fuzzer/execute/calling.py), verbatim.\n"
        + calling.embedded_source().rstrip(),
        *_head_source(case, output),
        *([render.render_nudged_trace_function(case.graph)] if spec.NUDGED else []),
        *([render.render_trace_function(case.graph),
           render.render_bit_noise_trace_function(case.graph)]
          if spec.BIT_NOISE is not None else []),
        *select_source,
        _configure_source(config + _flags_source(case)) +
        f"BACKEND_NAME = {backend}  # the torch.compile backend\n"
        f"HOOK = {'BACKEND' if backend == 'BACKEND' else 'None'}  # a deployment's test double",
        "# The program every repro runs (fuzzer/reduce/repro_main.py), verbatim.\n"
        + repro_main.embedded_source().rstrip(),
        'if __name__ == "__main__":\n    sys.exit(main())',
    ]
    return "\n\n\n".join(dict.fromkeys(parts)) + "\n"  # the trace once, whoever needs it


def _header(case: Case) -> str:
    """The repro's docstring: what it reproduces, on what, and its exit statuses."""
    assert case.verdict is not None  # repro_source checks first
    return (
        f'"""numfuzz repro: {_quotable(case.verdict.summary())}\n\n'
        f"{len(case.graph)} ops, {_quotable(case.dtype)}, {_quotable(case.device)}, "
        f"compiled {case.recipe.surface.label()}, "
        f"torch {torch.__version__}. Generated "
        "by numfuzz; a person should check it before filing.\n"
        "Exit status: 1 = the divergence reproduces, 0 = it does not, 2 = it could not run;\n"
        "so it can drive `python -m torch._inductor.compiler_bisector run python repro.py`.\n"
        f"{_malloc_check_note(case)}"
        '"""\n'
    )


def _backend_source(case: Case) -> tuple[str, str]:
    """The repro's imports and its backend expression: compiler_bisector run sets
    TORCH_COMPILE_BACKEND to move between backends; a custom backend (a test double) is
    imported by name."""
    imports = "import contextlib\nimport os\nimport sys\n\n"
    if ":" in case.recipe.backend:
        module, _, attr = case.recipe.backend.partition(":")
        return imports + f"from {module} import {attr} as BACKEND\n\n", "BACKEND"
    return imports, f"os.environ.get('TORCH_COMPILE_BACKEND', {case.recipe.backend!r})"


def _configure_source(lines: str) -> str:
    """``configure``: the Inductor options and torch.backends flags numfuzz ran it under, set
    where ``main`` begins (``repro_main``)."""
    return ("def configure():\n"
            '    """The Inductor options and torch.backends flags numfuzz ran it under."""\n'
            + lines + "\n\n")


def _flags_source(case: Case) -> str:
    """The torch.backends flags the case ran under (TF32, reduced-precision reductions), set
    as numfuzz's worker set them (``execute.flags``); a case recorded before numfuzz kept them
    ran under torch's defaults, which the repro then leaves alone. A CPU case under the
    defaults says nothing: the CPU kernels do not read them."""
    flags = case.recipe.flags
    if flags is None:
        return "    # torch.backends flags: not recorded for this case (torch's defaults then)\n"
    if flags.is_default and not Device(case.device).is_cuda:
        return ""
    return "    # the torch.backends flags numfuzz ran it under (TF32, reduced precision)\n" + \
        "".join(f"    {line}\n" for line in flags.source_lines())


def _sdpa(case: Case) -> tuple[list[str] | None, list[str] | None]:
    """The attention backends to pin for eager and for compiled: those eager ran (recorded in
    the verdict) for both, since compiled picks the way eager does when both are left free;
    where numfuzz pinned eager alone (``eager_sdpa``), eager on that one and compiled free."""
    pinned = case.recipe.flags.eager_sdpa if case.recipe.flags is not None else ""
    if pinned:
        return [pinned], None
    seen = [name for name in (case.verdict.sdpa if case.verdict is not None else [])
            if name in SDPA_BACKENDS]
    return (seen or None), (seen or None)


def _quotable(text: str) -> str:
    """Text from a case file, safe inside the repro's docstring (no quote or backslash can end
    it early: a verdict message is data, never code)."""
    return text.replace("\\", "/").replace('"', "'").replace("\r", " ")


def _place(case: Case, verdict: Verdict) -> str:
    """What OUTPUT indexes, in the repro's own names: an output, an input's gradient, or an
    input as the call left it."""
    out = verdict.diverging
    details = out.details if out is not None else Details()
    for node, text in ((details.gradient_of, "the gradient of {}"),
                       (details.state_of, "{} after the call")):
        if node is not None and node in case.graph.input_ids():
            return text.format(case.graph.var(node))
    if details.of_output is not None:
        return f"output {details.of_output}"
    return f"output {verdict.output if verdict.output is not None else 0}"


def _kinds(case: Case) -> list[str]:
    """Per input ``x``/``param``/``buffer`` where the case ran as a module (not in training)."""
    return [] if case.recipe.surface.training else semantics.kinds(case.graph)


def _written(case: Case) -> list[int]:
    inputs = case.graph.input_ids()
    return [inputs.index(n) for n in case.graph.written_inputs()]


def _names_of(case: Case) -> dict[int, str]:
    """Every node's Python name, keyed by node id."""
    return {n: case.graph.var(n) for n in case.graph.node_ids()}


def _node(case: Case, output: int) -> int | tuple | None:
    """What OUTPUT reads in the trace: an output's node, or ``("final", n)`` for an input the
    program writes (``semantics.judged``)."""
    keys = semantics.judged(case.graph)
    return keys[output] if output < len(keys) else None


def _output_dtype(verdict: Verdict) -> str:
    """The dtype of the output the verdict names (the runner takes its tolerance by it)."""
    out = verdict.diverging
    return out.dtype if out is not None else ""


def _bit_noise_key(case: Case, output: int, stands: bool):
    """The trace's key of OUTPUT where the program reinterprets computed floats (the runner's
    ``bit_noise``: what one step of noise there moves is not judged), else None."""
    keys = semantics.judged(case.graph)
    if stands or case.recipe.surface.training or output >= len(keys) \
            or not render.bit_noise_sources(case.graph):
        return None
    return keys[output]


def _nudged(case: Case, output: int) -> bool:
    """Is OUTPUT a discrete code that eager's noise reaches? Its stability under that noise
    is then part of the evidence (``semantics.stability``)."""
    node = _node(case, output)
    # as the runner: no float64 run stands for a program that reinterprets bits, so none nudged
    return node is not None and semantics.float64_stands(case.graph) and \
        semantics.noise_reaches(case.graph, node)


def _select(case: Case, output: int, values: dict) -> tuple[dict | None, list[str]]:
    """For an index output (``semantics.selections``): what the repro needs to judge it as
    numfuzz did (its op's input node, attrs, whether the order of equal values counts, the
    working dtype), and the source it carries: the op's selector (verbatim) and, unless the
    head already brought it, the trace."""
    graph = case.graph
    if output >= len(graph.outputs):
        return None, []
    pick = semantics.selections(graph, values)[output]
    if pick is None:
        return None, []
    carried = [] if _head_source(case, output) else [render.render_trace_function(graph)]
    selector = pick.rule.select
    return ({"source": pick.source, "attrs": dict(pick.attrs), "ordered": pick.ordered,
             "working": str(pick.working).removeprefix("torch.")},
            [*carried, "# How the op's indices select values (fuzzer/ir/ops), verbatim.\n"
             + inspect.getsource(selector).rstrip() + f"\n\n\nSELECTOR = {selector.__name__}"])


def _zero_signs(case: Case, output: int, values: dict) -> bool | torch.Tensor:
    """Where the program defines the sign of OUTPUT's zeros on the case's own inputs
    (``semantics.zero_signs_defined``): everywhere, nowhere, or per element."""
    node = _node(case, output)
    return node is not None and semantics.zero_signs_defined(case.graph, node, values)


def _signless(defined: bool | torch.Tensor) -> list[int] | None:
    """The flat indices whose zero sign ``defined`` leaves undefined; None where there are
    none, or where it is one answer for the whole output (``SIGNS``)."""
    if not isinstance(defined, torch.Tensor):
        return None
    return [int(i) for i in (~defined).reshape(-1).nonzero().reshape(-1)] or None


def _ordinal(case: Case, output: int) -> bool:
    codes = semantics.ordinal(case.graph)
    return codes[output] if output < len(codes) else True


def _head(case: Case, output: int) -> dict | str | None:
    """What the repro needs to grade a flip as numfuzz did: the head's inputs, attrs, dtype; or
    ``semantics.EXACT`` for an output no float feeds."""
    if output >= len(case.graph.outputs):
        return None
    source = semantics.evidence_source(case.graph, case.graph.outputs[output])
    if not isinstance(source, tuple):  # None, or semantics.EXACT (its one str)
        return source
    graph = case.graph
    node = graph.node(source[0])
    upstream = [{"input": graph.node(n).inputs[0], "attrs": dict(graph.node(n).attrs),
                 "working": graph.node(graph.node(n).inputs[0]).dtype,
                 "boundary": _step(graph, n).__name__}
                for n in semantics.upstream_steps(graph, source[0])]
    return {"inputs": list(node.inputs), "attrs": dict(node.attrs),
            "working": graph.node(node.inputs[0]).dtype, "upstream": upstream}


def _head_source(case: Case, output: int) -> list[str]:
    """The trace (every node's value, the same body as ``model``), the head's boundary and the
    jumps of the float steps further up (``semantics.upstream_steps``)."""
    graph = case.graph
    if output >= len(graph.outputs):  # a gradient (training): judged as a float
        return []
    source = semantics.evidence_source(graph, graph.outputs[output])
    if not isinstance(source, tuple):
        return []
    boundary = source[1]
    steps = [_step(graph, n) for n in semantics.upstream_steps(graph, source[0])]
    functions = list(dict.fromkeys([boundary, *steps]))
    table = ", ".join(f"{f.__name__!r}: {f.__name__}" for f in functions)
    return [render.render_trace_function(graph),
            "# The discontinuities numfuzz measured at (fuzzer/ir/ops/boundaries.py), verbatim.\n"
            + "\n\n\n".join(inspect.getsource(f).rstrip() for f in functions)
            + f"\n\n\nBOUNDARY = {boundary.__name__}\nBOUNDARIES = {{{table}}}"]


def _step(graph: Graph, node: int) -> Boundary:
    """The jump of a step ``semantics.upstream_steps`` named (it names only nodes with one)."""
    step = semantics.step_of(graph, node)
    assert step is not None
    return step


def _float64_values(case: Case) -> dict:
    """The float64 value of every node on the case's own inputs; eager's, as the runner takes
    them, where float64 cannot stand for the program (``semantics.float64_stands``)."""
    trace = render.load(render.render_trace(case.graph), "trace")
    with torch.no_grad():
        if not semantics.float64_stands(case.graph):
            return trace(*[rules.fresh(t) for t in case.ordered_inputs()])
        return rules.float64_run(trace, case.ordered_inputs())


def _undefined(case: Case, output: int, values: dict) -> list[int] | None:
    """Elements of the output numfuzz does not compare (``judge.semantics``), as flat indices."""
    if output >= len(case.graph.outputs):
        return None
    own = None
    if values:  # eager's own values too: a NaN it made at a head's input is undefined
        trace = render.load(render.render_trace(case.graph), "trace")
        with torch.no_grad():
            own = trace(*[rules.fresh(t) for t in case.ordered_inputs()])
    mask = semantics.undefined_elements(case.graph, values, own)[output]
    if mask is None or not bool(mask.any()):
        return None
    return [int(i) for i in mask.reshape(-1).nonzero().reshape(-1)]


def _grown(case: Case) -> list[int] | None:
    """The positions of the inputs that carry the batch, where the surface calls at another
    batch size (automatic dynamic) or promises a row's result whatever its batch."""
    from fuzzer.execute.runner import batch_positions

    surface = case.recipe.surface
    if not surface.automatic and surface.promise != "batch-invariant":
        return None
    return batch_positions(case.graph, case.ordered_inputs()) or None


def memcheck_environment() -> dict[str, str]:
    """What puts a child under glibc's malloc checking, by the library's name (the loader
    finds it beside the libc of the machine the repro runs on)."""
    return {"GLIBC_TUNABLES": memcheck.TUNABLE, "LD_PRELOAD": memcheck.LIBRARY}


def _malloc_check_note(case: Case) -> str:
    """How to run it as it ran, where it was found under glibc's malloc checking (a write past a
    buffer that glibc notices only then)."""
    if not memcheck.found_under(case.origin, case.verdict.kind if case.verdict else ""):
        return ""
    if case.verdict is not None and case.verdict.kind == "memory-unsafe":
        return ("A memory-unsafe kernel: `python repro.py` runs itself again under glibc's "
                "malloc checking,\nwhich aborts at the first corrupted heap block (glibc 2.34 "
                "or later).\n")
    return ("Found under glibc's malloc checking, which aborts at the first corrupted heap "
            f"block;\nrun it the same way: {memcheck.shell_prefix()} python repro.py\n")


def write_repro(case: Case, out_dir: Path) -> Path:
    """Write ``repro.py`` (and ``inputs.pt`` when the inputs are large) into ``out_dir``. A case
    numfuzz cannot render (its own bug, e.g. a run of the program it did not foresee) is a
    ``CaseError`` of one line, never a traceback; what a caller saved before stays saved."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "repro.py"
    try:
        source = repro_source(case, out_dir)
    except (CaseError, OSError):
        raise
    except Exception as err:
        raise CaseError(f"numfuzz could not render repro.py for this case (its own failure): "
                        f"{type(err).__name__}: {err}") from None
    return atomic_write(path, source)

"""Standalone ``repro.py`` files: the model exactly as numfuzz ran it, inputs bit-exact, torch only.

The function is ``render.render_function`` of the case's graph, the same text the workers executed.
Small inputs are written inline as exact Python float literals (``repr`` round-trips every float64,
and every float32/bfloat16/float16 value is one); larger ones go to an adjacent ``inputs.pt``. The
script runs eager, compiled and float64, prints the differing elements, and exits 1 when the
divergence reproduces, 0 when it does not, so it can drive ``compiler_bisector run``.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from fuzzer import render
from fuzzer.case import Case
from fuzzer.oracle import TOLERANCE

INLINE_LIMIT = 256  # input elements written into the file; more go to inputs.pt

CHECKS = {
    "int-flip": '''\
def diverges(eager, compiled, ref):
    """A discrete output differs, and float64 does not side with compiled on every such element."""
    bad = (eager != compiled) & (ref.to(eager.dtype) != compiled)
    return bad, bool(bad.any())
''',
    "nonfinite": '''\
def diverges(eager, compiled, ref):
    """inf/NaN in compiled where eager and float64 are finite."""
    bad = torch.isfinite(eager) & torch.isfinite(ref) & ~torch.isfinite(compiled)
    return bad, bool(bad.any())
''',
    "eager-nonfinite": '''\
def diverges(eager, compiled, ref):
    """inf/NaN in eager where compiled is finite."""
    bad = ~torch.isfinite(eager) & torch.isfinite(compiled)
    return bad, bool(bad.any())
''',
    "accuracy": '''\
def diverges(eager, compiled, ref):
    """Fails PyTorch's own accuracy rule against the float64 reference."""
    from torch._dynamo.utils import same

    bad = eager != compiled
    quiet = lambda *args, **kwargs: None  # noqa: E731
    return bad, not same(eager, compiled, fp64_ref=ref, tol=TOL, equal_nan=True, log_error=quiet)
''',
}

MAIN = '''\
def main():
    torch._inductor.config.fallback_random = True
{config}    inputs = get_inputs()
    eager = model(*inputs)
    try:
        compiled = torch.compile(model, backend={backend}, fullgraph=True)(*inputs)
    except Exception as err:
        print(f"compiled failed: {{type(err).__name__}}: {{err}}")
        return 1 if KIND == "crash" else 0
    if KIND == "crash":
        print("compiled ran without error")
        return 0
    ref = model(*[t.double() if t.is_floating_point() else t for t in inputs])
    found = False
    for i, (e, c, r) in enumerate(zip(eager, compiled, ref)):
        if i != OUTPUT:
            continue
        bad, diverged = diverges(e, c.to(e.device), r)
        found |= diverged
        print(f"output {{i}} ({{e.dtype}}): {{'DIVERGES' if diverged else 'ok'}}, "
              f"{{int(bad.sum())}}/{{e.numel()}} elements differ")
        for index in bad.nonzero()[:8].tolist():
            at = tuple(index)
            print(f"  at {{at}}: eager={{e[at].item()!r}} compiled={{c[at].item()!r}} "
                  f"float64={{r[at].item()!r}}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _literal(value: float | int | bool) -> str:
    if isinstance(value, bool) or isinstance(value, int):
        return repr(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _tensor_source(name: str, t: torch.Tensor) -> str:
    values = ", ".join(_literal(v) for v in t.reshape(-1).tolist())
    dtype = str(t.dtype)
    shape = tuple(t.shape)
    text = f"torch.tensor([{values}], dtype={dtype})"
    if len(shape) != 1:
        text += f".reshape{shape}"
    return f"    {name} = {text}"


def _inputs_source(case: Case, out_dir: Path) -> str:
    names = [case.graph.var(n) for n in case.graph.input_ids()]
    tensors = case.ordered_inputs()
    lines = ["def get_inputs():"]
    if sum(t.numel() for t in tensors) <= INLINE_LIMIT:
        lines += [_tensor_source(n, t) for n, t in zip(names, tensors)]
        lines.append(f"    return [t.to(DEVICE) for t in ({', '.join(names)},)]")
    else:
        torch.save([t.cpu() for t in tensors], out_dir / "inputs.pt")
        lines += ["    here = os.path.dirname(os.path.abspath(__file__))",
                  "    path = os.path.join(here, 'inputs.pt')",
                  "    return [t.to(DEVICE) for t in torch.load(path, weights_only=True)]"]
    return "\n".join(lines)


def repro_source(case: Case, out_dir: Path) -> str:
    verdict = case.verdict
    kind = verdict.kind if verdict else "int-flip"
    output = verdict.output if verdict and verdict.output is not None else 0
    title = verdict.summary() if verdict else "numfuzz case"
    config = "".join(f"    torch._inductor.config.{k} = {v!r}\n" for k, v in case.config.items())
    inputs_src = _inputs_source(case, out_dir)
    header = (
        f'"""numfuzz repro: {title}\n\n'
        f"{len(case.graph)} ops, {case.dtype}, {case.device}, torch {torch.__version__}. Generated "
        "by numfuzz; a person should check it before filing.\n"
        "Exit status: 1 = the divergence reproduces, 0 = it does not, so this file can drive\n"
        "`python -m torch._inductor.compiler_bisector run python repro.py`.\n"
        '"""\n'
    )
    imports = "import os\nimport sys\n\n"
    check = CHECKS.get(kind, CHECKS["int-flip"])
    # compiler_bisector run sets TORCH_COMPILE_BACKEND to move between backends.
    backend = f"os.environ.get('TORCH_COMPILE_BACKEND', {case.backend!r})"
    if ":" in case.backend:  # a custom backend (test doubles): import it by name
        module, _, attr = case.backend.partition(":")
        imports += f"from {module} import {attr} as BACKEND\n\n"
        backend = "BACKEND"
    parts = [
        header + imports + render.HEADER.rstrip() + "\n\ninf, nan = float('inf'), float('nan')",
        render.render_function(case.graph),
        f"DEVICE = {case.device!r}\nKIND = {kind!r}\nOUTPUT = {output}\n"
        f"TOL = {TOLERANCE.get(case.dtype, 1e-4)!r}",
        inputs_src,
        check.rstrip(),
        MAIN.format(config=config, backend=backend).rstrip(),
    ]
    return "\n\n\n".join(parts) + "\n"


def write_repro(case: Case, out_dir: Path) -> Path:
    """Write ``repro.py`` (and ``inputs.pt`` when the inputs are large) into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "repro.py"
    path.write_text(repro_source(case, out_dir))
    return path

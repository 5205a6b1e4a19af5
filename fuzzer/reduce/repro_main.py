"""The program every ``repro.py`` runs, as a module a linter and a type checker read: ``main``
runs the model eager, compiled and in float64 as numfuzz did, judges the output with the judge's
own rules against the divergence the case recorded, prints the differing elements, and exits 1
when it reproduces, 0 when it does not, 2 when it could not run (so it can drive
``compiler_bisector run``).

``reduce.repro`` writes a file that defines, in this order: the model (``model``; ``trace`` and
its nudged twins where the judge needs node values), the case's constants (``KEY``,
``OUTPUT`` ...), ``get_inputs``, ``configure`` (the Inductor options and torch.backends flags
numfuzz ran it under), ``BACKEND_NAME`` and ``HOOK``, the judge's rules (``judge.rules``) and the
run harness (``execute.calling``) verbatim, then everything below ``EMBEDDED`` in this file,
verbatim (``embedded_source``). Above it, the same names are imported or stand as placeholders,
so that what is checked here is the code the repro runs.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import torch

from fuzzer.execute.calling import (
    Deployed,
    call,
    compile_model,
    forward_backward,
    grown,
    module_program,
)
from fuzzer.judge.rules import (
    NUDGES,
    float64_run,
    fresh,
    head_evidence,
    judge_selection,
    moved_by_noise,
    on_a_tie,
    output_kind,
    rows_apart,
    same_bits,
    selection_code,
    showing,
    stable_codes,
    torch_frames,
)

# What a repro defines above this code (``reduce.repro.repro_source``): placeholders here.
model: Any = None
trace: Any = None
nudged_trace: Any = None
bit_noise_trace: Any = None
SELECTOR: Any = None
BOUNDARY: Any = None
UNDEFINED: Any = None
HEAD: Any = None
BIT_NOISE: Any = None
SIGNLESS: Any = None
SELECT: Any = None
GROWN: Any = None
SDPA: Any = None
COMPILED_SDPA: Any = None
HOOK: Any = None
BACKEND_NAME: Any = "inductor"
BOUNDARIES: dict = {}
KEY: dict = {}
NAMES_OF: dict = {}
COMPILE: dict = {}
MALLOC_CHECK: dict = {}
WRITTEN: list = []
NAMES: list = []
KINDS: list = []
OUTPUT, NODE, TIMEOUT, THREADS = 0, 0, 0, 0
PLACE, PROMISE = "", ""
DEPLOYMENT: dict | None = None  # how a deployment path builds the program; None: torch.compile
TOL, NOISE_TOL, FLOOR = 0.0, 0.0, 0.0
ORDINAL, PARITY, FLOAT64, NUDGED, SIGNS, TRAINING = True, False, True, False, True, False


def get_inputs() -> list[torch.Tensor]:
    return []


def configure() -> None:
    """The Inductor options and torch.backends flags numfuzz ran the case under."""


EMBEDDED = "# ---------------- the repro's main (fuzzer/reduce/repro_main.py), verbatim"
def run(fn, args):
    """What numfuzz judged: the outputs, the inputs WRITTEN as the call left them, then
    (TRAINING) the gradients; and what the call did to storage besides: which inputs each
    output shares storage with, which other inputs it changed."""
    if TRAINING:
        return forward_backward(fn, args, WRITTEN), ((), ())
    return call(fn, args, WRITTEN)


def sdpa(names):
    """Attention on these backends only (None: torch chooses), as numfuzz saw eager run it."""
    if not names:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([getattr(SDPBackend, name) for name in names])


def under_malloc_check():
    """A memory-unsafe kernel corrupts the heap, which glibc notices for sure only under its
    malloc checking: run this script again under it, in a child, whose death is the bug."""
    import signal
    import subprocess

    env = {**os.environ, "NUMFUZZ_REPRO_CHILD": "1", **MALLOC_CHECK}
    proc = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env)
    if proc.returncode < 0:
        print(f"compiled: the process died of {signal.Signals(-proc.returncode).name}: "
              "DIVERGES")
        return 1
    return proc.returncode


def main():
    """Eager, compiled and float64 as numfuzz ran them, judged by numfuzz's rules against the
    divergence the case recorded: exit 1 when it reproduces, 0 when not, 2 when it cannot run."""
    if KEY["kind"] == "memory-unsafe" and os.environ.get("NUMFUZZ_REPRO_CHILD") != "1":
        return under_malloc_check()
    torch._inductor.config.fallback_random = True
    if THREADS:  # Inductor's CPU code depends on it
        torch.set_num_threads(THREADS)
    configure()
    try:
        inputs = get_inputs()
        program = module_program(model, KINDS, WRITTEN) if KINDS else model
        with sdpa(SDPA):
            eager, eager_did = run(program, inputs)
        ref = float64_run(lambda *wide: run(model, wide)[0], inputs) if FLOAT64 else \
            run(program, inputs)[0]  # a second eager run: what the program is judged against
    except Exception as err:
        print(f"cannot run the repro: {type(err).__name__}: {err}")
        return 2
    ran = run_compiled(inputs)
    if isinstance(ran, int):  # compiled raised or hung: whether as numfuzz saw it
        return ran
    program, compiled, compiled_did = ran
    if KEY["kind"] == "memory-unsafe":  # freeing its outputs is where glibc would notice
        del compiled
        print("no abort: the heap corruption went unnoticed in this run")
        return 0
    if KEY["kind"] == "promise":  # what this surface promises exactly, bit for bit
        return promise_broken(program, inputs, eager, compiled)
    if KEY["kind"] == "aliasing":  # what the call did to storage, not values
        return storage_differs(eager_did, compiled_did)
    if len(compiled) != len(eager):
        print(f"compiled returned {len(compiled)} outputs, eager {len(eager)}")
        return 1 if KEY["kind"] == "meta" else 0
    return judged(inputs, eager[OUTPUT].cpu(), compiled[OUTPUT].cpu(), ref[OUTPUT].cpu())


def run_compiled(inputs):
    """The program compiled (or deployed) and run as numfuzz did: (program, outputs, what the
    call did to storage), or, where compiling or running raised or hung, the exit status (1:
    the way numfuzz saw it fail)."""
    if KEY["kind"] == "timeout":
        import signal

        def alarm(*args):
            raise TimeoutError(f"no answer within {TIMEOUT}s")

        signal.signal(signal.SIGALRM, alarm)
        signal.alarm(TIMEOUT)
    try:
        compile = lambda fn: torch.compile(fn, backend=BACKEND_NAME, **COMPILE)  # noqa: E731
        if DEPLOYMENT is not None:  # a deployment: torch.export, AOTInductor's package
            compile = lambda fn: Deployed(fn, DEPLOYMENT, HOOK)  # noqa: E731
        program = module_program(model, KINDS, WRITTEN, compile) if KINDS else \
            compile_model(model, compile)
        with sdpa(COMPILED_SDPA):
            if GROWN is not None:  # automatic dynamic: a first call at another batch size
                run(program, grown(inputs, GROWN))
            compiled, compiled_did = run(program, inputs)
    except Exception as err:
        raised = "timeout" if isinstance(err, TimeoutError) else "crash"
        print(f"compiled failed: {type(err).__name__}: {err}")
        print(f"  in {' <- '.join(reversed(torch_frames(err))) or 'no torch frame'}")
        seen = (raised, type(err).__name__, torch_frames(err))
        return 1 if seen == (KEY["kind"], KEY["error"], KEY["frames"]) else 0
    if KEY["kind"] == "timeout":
        signal.alarm(0)
    return program, compiled, compiled_did


def storage_differs(eager_did, compiled_did):
    """An aliasing divergence: which inputs each output shares storage with, and which inputs
    compiled changed that the program never writes, against eager."""
    named = lambda positions: [NAMES[i] for i in positions] or "no input"  # noqa: E731
    for i, (want, got) in enumerate(zip(eager_did[0], compiled_did[0])):
        if want != got:
            print(f"output {i} shares storage with {named(want)} in eager, with "
                  f"{named(got)} compiled: DIVERGES")
    if compiled_did[1]:
        print(f"compiled changed {named(compiled_did[1])}, which the program never "
              "writes: DIVERGES")
    return 1 if eager_did[0] != compiled_did[0] or compiled_did[1] else 0


def judged(inputs, e, c, r):
    """OUTPUT judged by numfuzz's rules (``output_kind``) with the evidence numfuzz had: the
    elements never compared, zeros whose sign is not defined, the head's distance from its
    discontinuity, an index output's values, float64's code under eager's noise; the elements
    that show it listed (``showing``)."""
    if BIT_NOISE is not None:  # floats a dtype view reinterprets: noise there, amplified
        base = trace(*[fresh(t) for t in inputs])[BIT_NOISE].cpu()
        runs = [[bit_noise_trace(k, *[fresh(t) for t in inputs])[BIT_NOISE].cpu()]
                for k in range(NUDGES)]
        moved = moved_by_noise([base], runs, [NOISE_TOL])[0]
        if moved is not None and moved.shape == c.shape:
            c = torch.where(moved, e, c)
            print(f"  {int(moved.sum())} elements one step of rounding noise before a dtype "
                  "view moves: not judged")
    undefined = None
    if UNDEFINED is not None:
        undefined = torch.zeros(e.shape, dtype=torch.bool)
        undefined.view(-1)[list(UNDEFINED)] = True
    signs: Any = SIGNS  # True, False, or per element
    if SIGNS and SIGNLESS is not None:
        signs = torch.ones(e.shape, dtype=torch.bool)
        signs.view(-1)[list(SIGNLESS)] = False
    strong, ulps, own_ulps = head_strength(inputs, e)
    code, picks = None, None
    if SELECT is not None:  # an index output: judged by the values its indices select
        own = trace(*[fresh(t) for t in inputs])[SELECT["source"]].cpu()
        x64 = float64_run(trace, inputs)[SELECT["source"]].cpu() if FLOAT64 else own
        args = (SELECTOR, SELECT["attrs"], SELECT["ordered"])
        picks = [(side, SELECTOR(x64, side.long(), SELECT["attrs"])[0]) for side in (e, c, r)]
        e, c, r, ulps, own_ulps, strong = judge_selection(
            *args, getattr(torch, SELECT["working"]), x64, own, e, c, r, FLOOR)
        code = lambda index: selection_code(*args, x64, index)  # noqa: E731
        print(f"  (indices judged by the values they select in {NAMES_OF[SELECT['source']]})")
    stable = code_stability(inputs, r, code)
    kind = output_kind(e, c, r, TOL, undefined, ORDINAL, strong, PARITY, stable, signs)
    diverged = kind == KEY["kind"]
    print(f"{PLACE} ({e.dtype}): {kind}: {'DIVERGES' if diverged else 'ok'}")
    if kind not in ("ok", "meta"):
        show_elements(showing(kind, e, c, r, undefined, ORDINAL, signs), e, c, r, picks, ulps,
                      own_ulps)
    return 1 if diverged else 0


def head_strength(inputs, e):
    """Per element, whether float64 sits far enough from the head's discontinuity to be strong
    evidence (all: no float feeds the output; None: no head known), and the distances."""
    if HEAD == "exact":  # no float feeds this output: no rounding noise to explain a flip
        return torch.ones(e.shape, dtype=torch.bool), None, None
    if HEAD is None:
        return None, None, None
    with sdpa(SDPA):  # how far float64 sits from the head's boundary vs eager's error
        own = trace(*[fresh(t) for t in inputs])
    fp64 = float64_run(trace, inputs) if FLOAT64 else own  # eager stands for float64
    ins = [fp64[i].double().cpu() for i in HEAD["inputs"]]
    _, ulps, own_ulps, strong = head_evidence(ins, own[HEAD["inputs"][0]].cpu(), BOUNDARY,
                                              HEAD["attrs"], tuple(e.shape),
                                              getattr(torch, HEAD["working"]), FLOOR)
    for step in HEAD["upstream"]:  # a step further up on a tie: its jump may be the flip
        if on_a_tie([fp64[step["input"]].double().cpu()], own[step["input"]].cpu(),
                    BOUNDARIES[step["boundary"]], step["attrs"],
                    getattr(torch, step["working"]), FLOOR):
            print(f"  a {step['boundary']} step further up (on node {step['input']}) "
                  "sits on a tie: its jump may be the flip, so no flip is strong")
            strong = torch.zeros_like(strong)
    return strong, ulps, own_ulps


def code_stability(inputs, r, code):
    """Where float64's code survives eager's own rounding noise (a chaotic head's does not);
    None where numfuzz did not measure it."""
    if not NUDGED:
        return None
    try:
        stable = stable_codes(r, [(code or (lambda t: t))(
            float64_run(lambda *wide, k=k: nudged_trace(k, *wide), inputs)[NODE].cpu())
            for k in range(NUDGES)])
    except Exception:  # what cannot be checked is not evidence
        stable = torch.zeros(r.shape, dtype=torch.bool)
    if not bool(stable.all()):
        print(f"  float64's own code moves under eager's rounding noise on "
              f"{int((~stable).sum())} elements: no flip there is strong")
    return stable


def show_elements(bad, e, c, r, picks, ulps, own_ulps):
    """The first elements that show it: eager, compiled and float64, an index's picks, the
    head's distance from its boundary."""
    print(f"  {int(bad.sum())}/{e.numel()} elements")
    for index in bad.nonzero()[:8].tolist():
        at = tuple(index)
        line = (f"  at {at}: eager={e[at].item()!r} compiled={c[at].item()!r} "
                f"float64={r[at].item()!r}")
        if picks is not None:  # the indices and the values they select, not their ranks
            sides = [f"{int(i[at])} -> {float(v[at])!r}" for i, v in picks]
            line = (f"  at {at}: eager={sides[0]}, compiled={sides[1]}, float64={sides[2]} "
                    "(index -> the value it selects)")
            line += (f", compiled's pick {float(ulps[at]):.3g} ulps from float64's, "
                     f"eager's noise {float(own_ulps[at]):.3g} ulps")
        elif HEAD not in (None, "exact"):
            line += (f", float64 {float(ulps[at]):.3g} ulps from the boundary, "
                     f"eager's noise {float(own_ulps[at]):.3g} ulps")
        print(line)


def promise_broken(program, inputs, eager, compiled):
    """numfuzz saw the surface's promise broken: eager's bits (numerics="strict"), or a row
    the same computed alone as in its batch (batch_invariant)."""
    if PROMISE == "strict":
        same = same_bits(eager[OUTPUT].cpu(), compiled[OUTPUT].cpu())
        print(f"{PLACE}: compiled {'is' if same else 'is not'} eager's bit for bit: "
              f"{'ok' if same else 'DIVERGES'}")
        return 0 if same else 1
    size = inputs[GROWN[0]].shape[0]
    rows = [run(program, [t[r:r + 1] if i in GROWN else t for i, t in enumerate(inputs)])[0]
            for r in range(size)]
    apart = rows_apart(compiled, rows)[OUTPUT]
    print(f"{PLACE}: rows {apart} differ from the same rows computed alone: "
          f"{'DIVERGES' if apart else 'ok'}")
    return 1 if apart else 0


def embedded_source() -> str:
    """Everything below ``EMBEDDED`` up to this function: what a repro carries."""
    import inspect

    text = inspect.getsource(sys.modules[__name__])
    body = text.split("\nEMBEDDED = ", 1)[1].split("\n", 1)[1]
    return body.split("\ndef embedded_source", 1)[0].strip() + "\n"

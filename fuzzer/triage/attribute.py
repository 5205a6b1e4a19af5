"""Triage: which knob or compiler stage makes a divergence go away, and the bug's stable signature.

Attribution re-runs a (minimized) case with one knob flipped at a time, each in a fresh compile
(``Recipe.fresh``): Inductor config knobs are patched around the compile inside the usual worker;
knobs read from the environment when a library loads (``ATEN_CPU_CAPABILITY``) get a worker of
their own from the runner pool (``execute.pool``), started with that environment; the
``aot_eager`` backend is the ablation that takes Inductor out altogether. Knobs that only steer
Triton (``eager_numerics.*``, ``online_softmax``) are listed as not applicable on the CPU rather
than run for nothing, and the ``cpp.*`` ones likewise on CUDA; a knob the installed torch does not
have is listed as "not in this torch" (knobs come and go between releases: detected, never
assumed). Three knobs change torch.backends flags instead (``execute.flags``, carried by the
recipe to the worker): ``tf32=off`` and ``reduced_precision_reduction=off`` (CUDA; both sides),
and ``eager_sdpa=math``, which pins eager alone to the math attention kernel, so a finding says
whether compiled is worse than the kernel eager really ran or than plain math too. Triton's FMA
contraction has no Inductor option of its own in torch 2.11 and 2.13: Inductor turns it off with
``emulate_precision_casts`` (``enable_fp_fusion = not emulate_precision_casts``).

Then PyTorch's own ``CompilerBisector.do_bisect`` names the backend, subsystem and N-th
application. It runs in a child interpreter (``python -m fuzzer.triage.attribute bisect CASE``)
compiling with the backend the bisector asks for at each step: seconds per step, where
``python -m torch._inductor.compiler_bisector run python repro.py`` pays a fresh interpreter and
first compile per step, and needs a repro that honours ``TORCH_COMPILE_BACKEND``.
The bug's signature is ``fuzzer.triage.signature``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from fuzzer import clock
from fuzzer.corpus.case import Case
from fuzzer.device import Device
from fuzzer.execute import config as inductor_options
from fuzzer.execute.flags import Flags
from fuzzer.execute.pool import (
    OutOfTime,
    Runners,
    Spread,
    TaskRunner,
    run_here,
    run_within,
    scaled_timeout,
)
from fuzzer.execute.recipe import FRESH_ENV, Recipe
from fuzzer.execute.surface import DEPLOYED, PATHS, Deployment, deployment
from fuzzer.execute.task import HARNESS_ERROR
from fuzzer.execute.workers import _python_path
from fuzzer.gen import domains
from fuzzer.judge.key import same_divergence
from fuzzer.judge.kinds import Kind
from fuzzer.judge.verdict import Verdict

OUTCOMES = ("vanishes", "persists", "changes", "error", "unstable", "n/a")
EAGER_BACKEND = "backend=eager"
AOT_EAGER = "backend=aot_eager"
# ``backend=eager`` is not run where ``backend=aot_eager`` makes the divergence vanish: the layer
# is already told there (Inductor's), and a run costs a compile.
EAGER_NOT_RUN = "not run: backend=aot_eager makes it vanish, so Inductor's"


@dataclass(frozen=True)
class Knob:
    """One flip. ``config`` patches torch._inductor.config; ``env`` needs a worker of its own;
    ``flags`` changes the torch.backends flags the worker pins (``execute.flags``: TF32 for both
    sides, or eager's attention backend alone)."""

    name: str
    config: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    backend: str | None = None
    devices: tuple[str, ...] = ("cpu", "cuda")
    why: str = ""
    flags: dict = field(default_factory=dict)
    surface: dict = field(default_factory=dict)  # compile arguments changed (``Surface`` fields)
    layout: str = ""  # a layout fact of the case's inputs taken back (``gen.domains``)

    def applied(self, case: Case) -> Case:
        """The case this knob runs: ``case`` itself, or (a layout knob) the same program and
        values without the layout fact, its recorded divergence kept as the target."""
        if not self.layout:
            return case
        graph, inputs = domains.without_layout_fact(case.graph, case.inputs, self.layout)
        return replace(case, graph=graph, inputs=inputs)

    def applies(self, device: str) -> bool:
        return Device(device).type in self.devices

    def idle_on(self, case: Case) -> str:
        """Why flipping this knob cannot change ``case`` (empty when it can): it acts on another
        device, on a compiler the case's path does not run, its flags are already so, or eager
        ran no attention kernel to re-pin."""
        if not self.applies(case.device):
            return f"does not act on {Device(case.device).type}"
        surface = case.recipe.surface
        if not surface.deployment.compiles and (self.config or self.backend):
            return f"the {surface.path} path runs the exported program with no compiler"
        if surface.deployed and self.backend:  # Recipe.compile: a deployment ignores it
            return f"the {surface.path} path compiles with Inductor whatever the backend"
        if not self.flags:
            return ""
        current = case.recipe.flags if case.recipe.flags is not None else Flags()
        if current.with_changes(self.flags) == current:
            return "already so in this case"
        pinned = self.flags.get("eager_sdpa")
        seen = case.verdict.sdpa if case.verdict is not None else []
        if pinned and not [b for b in seen if b != pinned]:
            return f"eager ran no attention backend but {pinned}" if seen \
                else "eager ran no scaled_dot_product_attention"
        return ""


KNOBS: tuple[Knob, ...] = (
    Knob("emulate_precision_casts", {"emulate_precision_casts": True},
         why="round fp16/bf16 at op boundaries like eager"),
    Knob("eager_numerics.division_rounding", {"eager_numerics.division_rounding": True},
         devices=("cuda",), why="IEEE division in Triton"),
    Knob("eager_numerics.use_pytorch_libdevice", {"eager_numerics.use_pytorch_libdevice": True},
         devices=("cuda",), why="CUDA toolkit libdevice instead of Triton's"),
    Knob("eager_numerics.disable_ftz", {"eager_numerics.disable_ftz": True}, devices=("cuda",),
         why="no flush of denormals in Triton"),
    Knob("split_reductions=False", {"split_reductions": False}, why="one-kernel reductions"),
    Knob("online_softmax=False", {"online_softmax": False}, devices=("cuda",),
         why="two-pass softmax (the online one exists only for Triton)"),
    Knob("pattern_matcher=False", {"pattern_matcher": False}, why="no pattern rewrites"),
    Knob("cpp.simdlen=0", {"cpp.simdlen": 0}, devices=("cpu",),
         why="scalar C++ code instead of vectorized math"),
    Knob("cpp.enable_floating_point_contract_flag=fast",
         {"cpp.enable_floating_point_contract_flag": "fast"}, devices=("cpu",),
         why="let the C++ compiler contract a*b+c into FMA, as ATen's own build may"),
    Knob("fallback_by_default", {"fallback_by_default": True},
         why="every op runs as its ATen kernel: no Inductor codegen"),
    Knob("ATEN_CPU_CAPABILITY=default", env={"ATEN_CPU_CAPABILITY": "default"},
         devices=("cpu",), why="scalar ATen and Inductor kernels (read when torch loads)"),
    Knob("numerics=strict", {"numerics": "strict"},
         why="every eager-numerics option at once (torch 2.15 and later)"),
    Knob("tf32=off", flags={"matmul_tf32": False, "cudnn_tf32": False}, devices=("cuda",),
         why="IEEE float32 in cuBLAS and cuDNN, eager and the ATen kernels compiled code calls"),
    Knob("reduced_precision_reduction=off", flags={"fp16_reduction": False,
                                                    "bf16_reduction": False},
         devices=("cuda",), why="fp16/bf16 GEMMs reduce in float32"),
    Knob("eager_sdpa=math", flags={"eager_sdpa": "MATH"},
         why="eager's attention on the math backend: is compiled worse than plain math too?"),
    Knob(AOT_EAGER, backend="aot_eager", why="no Inductor at all"),
    # With aot_eager, the backend isolation a triager asks for (``report.labels``): Dynamo's
    # graph run as it is, so what persists here is Dynamo's, not AOTAutograd's or Inductor's.
    Knob(EAGER_BACKEND, backend="eager", why="Dynamo alone: no AOTAutograd, no Inductor"),
)


# A knob that takes back one option of the case's surface is named for the option it takes back
# (``surface:freezing=True``): what the divergence needs, where taking it back makes it vanish.
SURFACE = "surface:"
# What each surface option is turned back to: torch's default, or (the GEMM backends) the one
# that leaves out the template the surface chose.
OFF = {"max_autotune_gemm_backends": "ATEN", "numerics": "default"}


# A deployment's stages (``surface.Deployment.stages``), each run alone to find the first one
# that shows the divergence, are knobs named ``stage:<path>``.
STAGE = "stage:"


def surface_knobs(case: Case) -> tuple[Knob, ...]:
    """One knob per option of the case's surface (``execute.surface``): each Inductor option
    users deploy that it sets (a catalogue surface's, or one a campaign pinned) turned back,
    and its compile arguments back to a static default compile; what makes the divergence
    vanish is what it needs of its surface."""
    options = {k: v for k, v in case.recipe.config.items() if k in DEPLOYED}
    knobs = [Knob(f"{SURFACE}{key}={value}", {key: OFF.get(key, not value)},
                  why=f"the surface without {key}={value}")
             for key, value in options.items() if isinstance(value, bool) or key in OFF]
    surface = case.recipe.surface
    knobs += [Knob(f"{STAGE}{path}", surface={"path": path}, why=deployment(path).stage_why)
              for path in surface.deployment.stages]
    for name, field_value, back in (("dynamic=True", surface.dynamic, {"dynamic": False}),
                                    ("automatic dynamic", surface.automatic,
                                     {"automatic": False}),
                                    (f"mode={surface.mode}", surface.mode != "default",
                                     {"mode": "default"})):
        if field_value:
            knobs.append(Knob(f"{SURFACE}{name}", surface=back,
                              why="the same compile without this argument of its surface"))
    return tuple(knobs)


# A knob that takes back one layout fact of the case's inputs is named for the fact
# (``layout:flat``): what the divergence needs of how its inputs are stored, where taking it back
# makes it vanish (``gen.domains.LAYOUT_FACTS``).
LAYOUT = "layout:"


def layout_knobs(case: Case) -> tuple[Knob, ...]:
    """One knob per layout fact the case's inputs carry (weights in one flat buffer, an input
    at a storage offset or non-contiguous, views passed beside their input), each taking it
    back alone."""
    return tuple(Knob(f"{LAYOUT}{fact}", layout=fact, why=domains.LAYOUT_FACTS[fact])
                 for fact in domains.layout_facts(case.graph, case.inputs))


def case_knobs(case: Case) -> tuple[Knob, ...]:
    """The knobs a case brings of its own: its surface's options and stages, then its layout
    facts."""
    return (*surface_knobs(case), *layout_knobs(case))


def knob_named(name: str) -> Knob:
    for knob in KNOBS:
        if knob.name == name:
            return knob
    raise KeyError(f"unknown knob {name!r}; known: {', '.join(k.name for k in KNOBS)}")


HARNESS_FAILURES = ("worker exited", "worker did not start", HARNESS_ERROR)


def outcome_of(target: Verdict, verdict: Verdict) -> str:
    """What a knob did: the same divergence, none left (ok, benign or weak: not a finding),
    another one, or a run that says nothing (a skip or a harness failure)."""
    if same_divergence(target, verdict):
        return "persists"
    if verdict.kind == Kind.SKIP or verdict.message.startswith(HARNESS_FAILURES):
        return "error"
    return "changes" if verdict.is_finding else "vanishes"


# ------------------------------------------------------------------ results


@dataclass
class KnobResult:
    knob: str
    outcome: str  # one of OUTCOMES
    verdict: str = ""  # the verdict's summary under this knob
    seconds: float = 0.0


@dataclass
class Attribution:
    """Which flips make the divergence vanish, and what the bisector named."""

    reproduces: bool
    baseline: str
    knobs: list[KnobResult] = field(default_factory=list)
    bisect: dict | None = None
    seconds: float = 0.0
    # Where it first diverges (``triage.locate.Location`` as plain data), where located.
    root: dict | None = None

    def vanishing(self) -> list[str]:
        return sorted(k.knob for k in self.knobs if k.outcome == "vanishes")

    def needs(self) -> list[str]:
        """The options of its surface it needs (``freezing=True``): those whose taking back
        makes it vanish."""
        return [k.removeprefix(SURFACE) for k in self.vanishing() if k.startswith(SURFACE)]

    def surface_knobs(self) -> list[KnobResult]:
        return [k for k in self.knobs if k.knob.startswith(SURFACE)]

    def layout(self) -> list[str]:
        """The layout facts of its inputs it needs (``flat``, ``offset``, ``strides``,
        ``aliased``): those whose taking back makes it vanish."""
        return [k.removeprefix(LAYOUT) for k in self.vanishing() if k.startswith(LAYOUT)]

    def layout_knobs(self) -> list[KnobResult]:
        return [k for k in self.knobs if k.knob.startswith(LAYOUT)]

    def stage(self) -> str:
        """Where a deployment's divergence appears ('' for torch.compile's, or none run): the
        stage name of ``first_stage``."""
        if not any(k.knob.startswith(STAGE) for k in self.knobs):
            return ""
        first = self.first_stage()
        return first.stage_name if first is not None else \
            "not told apart (a stage could not run or changed the divergence)"

    def first_stage(self) -> Deployment | None:
        """The deployment path whose stage first shows it: the first stage run alone that
        persists, else, where every one vanished, the path after the last (the case's own);
        None where no stage ran or one could not tell."""
        runs = [k for k in self.knobs if k.knob.startswith(STAGE)]
        if not runs:
            return None
        for k in runs:
            if k.outcome == "persists":
                return deployment(k.knob.removeprefix(STAGE))
        if not all(k.outcome == "vanishes" for k in runs):
            return None
        return deployment(PATHS[PATHS.index(runs[-1].knob.removeprefix(STAGE)) + 1])

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> Attribution | None:
        if not data:
            return None
        knobs = [KnobResult(**k) for k in data.get("knobs", [])]
        return cls(**{**data, "knobs": knobs})

    def summary(self) -> str:
        if not self.reproduces:
            return f"does not reproduce in a fresh compile ({self.baseline})"
        gone = ", ".join(self.vanishing()) or "no knob"
        text = f"vanishes with: {gone}"
        return f"{text}; bisector: {bisect_summary(self.bisect)}" if self.bisect else text


def bisect_summary(result: dict | None) -> str:
    """One line for a bisector result dict (see ``run_bisect``)."""
    if not result:
        return "not run"
    status = result.get("status")
    if status != "found":
        return f"{status}: {result.get('message', '')}".rstrip(": ")
    text = f"backend {result['backend']}"
    if result.get("subsystem"):
        text += f", subsystem {result['subsystem']}"
    config_change = bool(result.get("subsystem")) and \
        result.get("debug_info") == result.get("subsystem")
    if result.get("bisect_number") is not None and result.get("subsystem") and not config_change:
        text += f", application #{result['bisect_number']}"
        if result.get("debug_info"):
            text += f" ({result['debug_info']})"
    elif config_change:
        text += " (a config change fixes it)"
    return text


# ------------------------------------------------------------------ running knobs


def run_fresh(runner: TaskRunner, case: Case, recipe: Recipe | None = None,
              timeout: float | None = None) -> Verdict:
    """The case's verdict in a fresh compile, by its own recipe or ``recipe``; ``timeout``: cut
    after that many seconds (``pool.run_within``)."""
    return run_within(runner, case.task(recipe=(recipe or case.recipe).fresh()), timeout).verdict


HUNG = "hung"  # how a knob run cut at its scaled timeout reads in its verdict column


def flip(case: Case, knob: Knob, pool: Runners, k: int = 1,
         timeout: float | None = None) -> KnobResult:
    """Run the case with ``knob`` flipped, up to k fresh times, and say what became of the
    divergence: the outcome most runs agree on (stopping once one has a majority), else
    ``unstable``. A run past ``timeout`` (scaled to the case's own time) has hung: it is dropped,
    and the knob's outcome is ``error`` (unless the case itself is a timeout)."""
    idle = knob.idle_on(case)
    if idle:
        return KnobResult(knob.name, "n/a", idle)
    absent = inductor_options.missing(knob.config)
    if absent:  # knobs come and go between releases: detected, never assumed
        return KnobResult(knob.name, "n/a", f"not in this torch ({', '.join(absent)})")
    target = case.verdict
    assert target is not None  # a knob is flipped on a case that records its divergence
    start = clock.now()
    runner = pool.get(case.device, knob.env)
    seen: Counter[str] = Counter()
    verdict: Verdict | None = None
    while sum(seen.values()) < k and (not seen or seen.most_common(1)[0][1] <= k // 2):
        verdict = run_fresh(runner, knob.applied(case), case.recipe.with_knob(
            knob.config, knob.backend, knob.flags, knob.surface), timeout)
        hung = verdict.kind == Kind.TIMEOUT and target.kind != Kind.TIMEOUT
        if timeout is not None and hung:
            return KnobResult(knob.name, "error", f"{HUNG}: no answer in {timeout:.0f}s (the "
                              "case's own time, scaled); dropped", round(clock.now() - start, 2))
        seen[outcome_of(target, verdict)] += 1
    outcome, votes = seen.most_common(1)[0]  # an IndexError first where no run was made (k < 1)
    assert verdict is not None  # so the loop ran
    return KnobResult(knob.name, outcome if votes > k // 2 else "unstable", verdict.summary(),
                      round(clock.now() - start, 2))


def attribute(case: Case, pool: Runners, knobs: Sequence[Knob] = KNOBS,
              progress: Callable[[str], None] | None = None, k: int = 1,
              stop: Callable[[], bool] | None = None, spread: Spread | None = None,
              urgent: bool = False) -> Attribution:
    """Baseline in a fresh compile, then every knob (``flip``, k runs each); knobs are skipped if
    the baseline is gone. ``stop`` (a deadline) is asked before each run: OutOfTime when it
    says so. ``spread``: the knobs are shared out over the night's idle lanes (each with its own
    workers), ``urgent`` saying whether the case is of a value class that takes every lane."""
    say = progress or (lambda text: None)
    start = clock.now()

    def check_time() -> None:
        if stop is not None and stop():
            raise OutOfTime(f"deadline reached after {clock.now() - start:.0f}s of triage")

    if case.verdict is None or not case.verdict.is_finding:
        return Attribution(False, "the case records no divergence")
    if case.verdict.kind == Kind.TIMEOUT:
        return Attribution(True, "timeout: knobs not tried (each run would wait the full timeout)")
    check_time()
    began = clock.now()
    base = run_fresh(pool.get(case.device), case)
    timeout = scaled_timeout(clock.now() - began)  # a knob run past it has hung
    attribution = Attribution(same_divergence(case.verdict, base), base.summary())
    if attribution.reproduces:
        order = {knob.name: rank for rank, knob in enumerate((*knobs, *case_knobs(case)))}

        def job(knob: Knob) -> Callable[[Runners], KnobResult]:
            def run(runners: Runners) -> KnobResult:
                check_time()
                result = flip(case, knob, runners, k, timeout)
                say(f"knob {knob.name}: {result.outcome}")
                return result
            return run

        def run_all(chosen: Sequence[Knob]) -> list[KnobResult]:
            jobs = [job(knob) for knob in chosen]
            return spread.spread(jobs, pool, urgent) if spread is not None \
                else run_here(jobs, pool)

        eager = [knob for knob in knobs if knob.name == EAGER_BACKEND]
        results = run_all([knob for knob in (*knobs, *case_knobs(case)) if knob not in eager])
        results += _eager_after(results, eager, run_all)
        attribution.knobs = sorted(results, key=lambda r: order.get(r.knob, len(order)))
    attribution.seconds = round(clock.now() - start, 1)
    return attribution


def _eager_after(results: list[KnobResult], eager: list[Knob],
                 run_all: Callable[[Sequence[Knob]], list[KnobResult]]) -> list[KnobResult]:
    """``backend=eager`` (where asked for), run after the other knobs unless
    ``backend=aot_eager`` made the divergence vanish: the layer is Inductor's there, and each
    run is a compile. (Where aot_eager persists, changes it or could not tell, what Dynamo
    alone does still tells a layer apart.)"""
    aot_eager = next((r for r in results if r.knob == AOT_EAGER), None)
    if aot_eager is not None and aot_eager.outcome == "vanishes" and eager:
        return [KnobResult(EAGER_BACKEND, "n/a", EAGER_NOT_RUN)]
    return run_all(eager) if eager else []


# ------------------------------------------------------------------ the bisector


def run_bisect(case: Case, timeout: float = 900) -> dict:
    """``CompilerBisector.do_bisect`` on this case, in a child interpreter with caches off."""
    if case.recipe.backend != "inductor":
        return {"status": "skipped", "message": "the bisector drives Inductor; this case "
                                                f"compiles with {case.recipe.backend}"}
    if case.verdict is None or case.verdict.kind == Kind.TIMEOUT:
        return {"status": "skipped", "message": "timeouts are not bisected"}
    start = clock.now()
    with tempfile.TemporaryDirectory(prefix="numfuzz-bisect-") as tmp:
        path = case.save(Path(tmp) / "case.pt")
        env = {**os.environ, "PYTHONPATH": _python_path(), **FRESH_ENV}
        try:
            proc = clock.run_subprocess([sys.executable, "-m", "fuzzer.triage.attribute",
                                         "bisect", str(path)], timeout, env=env,
                                        capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "message": f"no answer within {timeout:.0f}s",
                    "seconds": round(clock.now() - start, 1)}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = " | ".join(proc.stderr.strip().splitlines()[-2:])[:300]
        return {"status": "error", "message": f"exit {proc.returncode}: {tail}",
                "seconds": round(clock.now() - start, 1)}
    return {**json.loads(lines[-1]), "seconds": round(clock.now() - start, 1)}


def _bisect_child(path: str) -> dict:
    """Child side: one compile per bisector step, judged by the oracle like every other run."""
    import torch
    from torch._inductor.compiler_bisector import CompilerBisector

    from fuzzer.execute.runner import Programs, prepared, run_draw

    case = Case.load(path)
    target = case.verdict
    assert target is not None  # run_bisect saves only a case that records its divergence
    torch.set_num_threads(1)
    programs = Programs.build(case.graph, case.recipe.surface.training)
    args = [t.to(case.device) for t in case.ordered_inputs()]
    steps: list[str] = []

    def good() -> bool:
        backend = CompilerBisector.get_backend() or "inductor"
        torch._dynamo.reset()
        recipe = case.recipe.with_knob(backend=backend)
        compiled, refused = prepared(programs, recipe, case.inputs, case.device)
        verdict = refused or run_draw(programs, compiled, args, recipe)[0]
        steps.append(f"{backend}/{CompilerBisector.get_subsystem() or '-'}: {verdict.kind}")
        return not same_divergence(target, verdict)

    with contextlib.redirect_stdout(sys.stderr):
        result = CompilerBisector.do_bisect(good)
    if result is None:
        return {"status": "no-culprit", "steps": steps,
                "message": "no backend reproduced it under the bisector"}
    return {"status": "found", "backend": result.backend, "subsystem": result.subsystem,
            "bisect_number": result.bisect_number, "debug_info": result.debug_info,
            "steps": steps}


def _child_main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "bisect":
        print("usage: python -m fuzzer.triage.attribute bisect CASE.pt", file=sys.stderr)
        return 2
    out = sys.stdout
    result = _bisect_child(argv[1])
    out.write(json.dumps(result) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))

"""Compile surfaces: how a case is compiled and run, as data, and the catalogue users deploy.

A ``Surface`` is what a case records of how it was compiled: the ``torch.compile`` arguments
(dynamic shapes, mode, training), automatic dynamic (a first call at another batch size, so the
judged call runs the recompiled symbolic-size kernel), the promise a torch makes exactly on it
(``numerics="strict"``, ``batch_invariant``) and its catalogue name. The Inductor options a
surface deploys together (freezing, max-autotune's C++ GEMM template …) travel in the recipe's
``config`` (``Recipe.on``), where triage flips them one at a time, so that a divergence says which
option of its surface it needs. ``compile_kwargs`` is the one place the arguments of
``torch.compile`` are decided: the workers call it and ``repro.py`` prints the same dict. A case's
surface is data from a file, so ``Surface.from_dict`` checks every field.

``CATALOGUE`` is every surface numfuzz fuzzes by itself (``available`` says which this torch and
device have: knobs and templates are detected by presence, never by version). The campaign's arms
are a surface of it crossed with a strategy (``campaign.arms``). Memory checking is not a
surface: it is an execution check that combines with any of them (``execute.memcheck``).

Training runs forward and backward (``calling.forward_backward``): the gradients of the sum of the
float outputs with respect to every float input, weights included, are judged by the same rules as
outputs. The forward outputs judged then come from the same compiled training graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from fuzzer.device import Device
from fuzzer.errors import CaseError, record_fields

MODES = ("default", "max-autotune", "max-autotune-no-cudagraphs", "reduce-overhead")
CUDA_ONLY_MODES = ("reduce-overhead",)  # CUDA graphs: nothing to capture on the CPU
# What a torch promises exactly on a surface: "strict" (numerics="strict": eager's pointwise math
# and reduction order, where 2.15's Triton backend says it keeps them) and "batch-invariant" (a
# row computed in a batch equals the same row computed alone, bit for bit).
PROMISES = ("", "strict", "batch-invariant")
ORIGINAL = ("dynamic", "mode", "training")  # the fields every case file has always recorded


@dataclass(frozen=True)
class Deployment:
    """One way a program is compiled and run (``Surface.path``), and all that numfuzz says and
    does differently for it: what builds the program (``calling.Deployed`` reads ``how``), what
    a title, a label and the backend isolation call it, and the stages triage runs before it to
    say where a divergence appears. One record per path: adding a path is one record here, and
    an unknown path is an error (``deployment``), never read as torch.compile."""

    path: str
    label: str  # how a person reads the surface (``Surface.label``; '' for torch.compile's)
    title: str  # what a title says ran it: ``under torch.export``
    tag: str  # a title's tag in place of the backend's name ('' : the backend's)
    builds: str  # what runs: "compile" (torch.compile), "export" (ExportedProgram.module()),
    # "inductor" (torch.compile of the exported program) or "package" (an AOTInductor package)
    decomposes: bool = False  # export's decompositions run first (run_decompositions)
    hook_stage: str = ""  # the stage a test double stands in for (``calling.Deployed``)
    returns_state: bool = True  # the buffers a call writes come back (a package keeps them)
    stages: tuple[str, ...] = ()  # the paths before it triage runs alone, in a model's order
    stage_why: str = ""  # this path run alone as a stage of a later one: what it is
    stage_name: str = ""  # where a divergence is when this stage first shows it (a signature's)
    layer: str = ""  # the same, as the backend isolation says it
    triage_label: str = ""  # the label a triager gives a cause first seen at this stage

    @property
    def deployed(self) -> bool:
        """Through torch.export (and AOTInductor) instead of torch.compile of the model."""
        return self.builds != "compile"

    @property
    def compiles(self) -> bool:
        """Does a compiler run (so Inductor's knobs and a backend can change what it runs)?"""
        return self.builds in ("compile", "inductor", "package")

    def how(self) -> dict:
        """What ``calling.Deployed`` (plain torch, embedded in ``repro.py``) needs to build it,
        as plain data."""
        return {"builds": self.builds, "decomposes": self.decomposes,
                "hook_stage": self.hook_stage, "returns_state": self.returns_state}


# In a model's order: torch.compile, then torch.export's program (``export``: after its
# decompositions) and AOTInductor's package (``aoti``), with the stages between them triage
# runs to say where a divergence appears (``export-raw``: before the decompositions;
# ``export-inductor``: the exported graph compiled by torch.compile).
DEPLOYMENTS = {d.path: d for d in (
    Deployment("compile", "", "torch.compile", "", "compile"),
    Deployment("export-raw", "torch.export (no decompositions)", "torch.export", "export",
               "export", hook_stage="export",
               stage_why="ExportedProgram.module() as torch.export traced it",
               stage_name="export (tracing and functionalization)",
               layer="torch.export's tracing", triage_label="oncall: export"),
    Deployment("export", "torch.export", "torch.export", "export", "export", decomposes=True,
               hook_stage="decompositions", stages=("export-raw",),
               stage_why="after export's decompositions (run_decompositions)",
               stage_name="export's decompositions", layer="torch.export's decompositions",
               triage_label="oncall: export"),
    Deployment("export-inductor", "torch.export + torch.compile",
               "torch.compile of the exported program", "", "inductor", decomposes=True,
               hook_stage="inductor", stages=("export-raw", "export"),
               stage_why="the exported graph compiled by torch.compile (Inductor)",
               stage_name="Inductor on the exported graph (torch.compile and AOT alike)",
               layer="Inductor on the exported graph", triage_label="module: inductor"),
    Deployment("aoti", "torch.export + AOTInductor", "AOTInductor", "aotinductor", "package",
               decomposes=True, hook_stage="aoti", returns_state=False,
               stages=("export-raw", "export", "export-inductor"),
               stage_name="AOTInductor's own (the package: its compile, constants, C++ wrapper "
                          "or runtime; the same graph through torch.compile agrees)",
               layer="AOTInductor's package", triage_label="module: aotinductor"),
)}
PATHS = tuple(DEPLOYMENTS)


def deployment(path: str) -> Deployment:
    """The record of deployment path ``path``; ValueError for a path numfuzz does not know."""
    try:
        return DEPLOYMENTS[path]
    except KeyError:
        raise ValueError(f"no deployment path {path!r} (one of {', '.join(PATHS)})") from None



@dataclass(frozen=True)
class Surface:
    dynamic: bool = False  # torch.compile(dynamic=True): kernels over symbolic sizes
    mode: str = "default"
    training: bool = False  # forward and backward, gradients judged like outputs
    # Automatic dynamic (torch.compile's default dynamic=None): one call at another batch size
    # first, so the judged call recompiles with that dim symbolic (``calling.grown``).
    automatic: bool = False
    promise: str = ""  # PROMISES: what compiled must keep exactly on this surface
    name: str = ""  # its CATALOGUE entry; "" for one pinned by flags (or an older case file)
    path: str = "compile"  # PATHS: torch.compile, or how a deployment runs the model

    @classmethod
    def from_dict(cls, data: Any) -> Surface:
        """The surface a case or task records; CaseError naming the first bad field."""
        surface = cls(**record_fields(data, [f.name for f in fields(cls)], "surface"))
        if not all(type(v) is bool for v in (surface.dynamic, surface.training,
                                             surface.automatic)):
            raise CaseError("surface dynamic, training and automatic must be true or false")
        if surface.mode not in MODES:
            raise CaseError(f"surface mode {str(surface.mode)[:80]!r} is not one of "
                            f"{', '.join(MODES)}")
        if surface.promise not in PROMISES:
            raise CaseError(f"surface promise {str(surface.promise)[:80]!r} is not one of "
                            f"{', '.join(p or '(none)' for p in PROMISES)}")
        if surface.name and surface.name not in CATALOGUE:
            raise CaseError(f"surface name {str(surface.name)[:80]!r} is not one of "
                            f"{', '.join(CATALOGUE)}")
        if surface.dynamic and surface.automatic:
            raise CaseError("surface dynamic and automatic exclude each other")
        if surface.path not in PATHS:
            raise CaseError(f"surface path {str(surface.path)[:80]!r} is not one of "
                            f"{', '.join(PATHS)}")
        if surface.deployed and (surface.dynamic or surface.automatic or surface.training or
                                 surface.mode != "default"):
            raise CaseError(f"surface path {surface.path} takes no torch.compile arguments")
        return surface

    def to_dict(self) -> dict:
        """Plain data. The fields added since the first three are written only when set, so
        a case on the default surface (or an older one) keeps its digest."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: v for k, v in data.items() if k in ORIGINAL or v != getattr(Surface, k)}

    @property
    def is_default(self) -> bool:
        return self == Surface() or self == Surface(name="default")

    def check_for(self, device: str, backend: str) -> None:
        """CaseError when this surface cannot be compiled so: torch hands a mode to a backend
        that is a function (``module:function``) as an argument it may not take (the built-in
        ones ignore it), and CUDA graphs need CUDA."""
        if self.mode != "default" and ":" in backend:
            raise CaseError(f"mode {self.mode} is Inductor's; backend {backend} is a function")
        if self.mode in CUDA_ONLY_MODES and not Device(device).is_cuda:
            raise CaseError(f"mode {self.mode} needs a CUDA device")

    def compile_kwargs(self) -> dict:
        """The keyword arguments of ``torch.compile`` besides the backend. Automatic dynamic is
        torch's own default (``dynamic=None``): static first, symbolic once a size changes."""
        return {"fullgraph": True, "dynamic": None if self.automatic else self.dynamic,
                "mode": None if self.mode == "default" else self.mode}

    @property
    def deployment(self) -> Deployment:
        """How its program is compiled and run (``Deployment``)."""
        return deployment(self.path)

    @property
    def deployed(self) -> bool:
        """Does it run the model through torch.export (and AOTInductor) instead of compile?"""
        return self.deployment.deployed

    def label(self) -> str:
        """How a person reads it: ``static``, or e.g. ``dynamic, max-autotune, training``."""
        if self.deployed:
            return self.deployment.label
        parts = [p for p, on in (("dynamic", self.dynamic),
                                 ("automatic dynamic", self.automatic),
                                 (self.mode, self.mode != "default"),
                                 ("training", self.training),
                                 (f"{self.promise} promise", bool(self.promise))) if on]
        return ", ".join(parts) or "static"


# ------------------------------------------------------------------ the catalogue


@dataclass(frozen=True)
class Entry:
    """One surface users deploy: its compile arguments, the Inductor options that go with it,
    where it runs, and what numfuzz knew of it before measuring (``prior``, ``cost``)."""

    name: str
    what: str
    surface: Surface
    options: dict = field(default_factory=dict)  # Inductor options deployed together
    devices: tuple[str, ...] = ("cpu", "cuda")
    # The strategies whose programs it can change (None: all). Freezing folds module state and
    # the GEMM template takes matmuls, so they pair with the programs that have them.
    strategies: tuple[str, ...] | None = None
    needs: tuple[str, ...] = ()  # what this torch must have (``HAVE``), besides the options
    # The share of the night it starts with, before any yield is measured: from the causes
    # numfuzz found by hand-steered campaigns on it (bench/RESULTS.md §23, §28, §29).
    prior: float = 1.0
    cost: float = 1.0  # seconds per case relative to the default surface, before measuring

    @property
    def inductor_only(self) -> bool:
        """Does it need Inductor (options, a mode, a promise, a deployment path), so a custom
        backend cannot take it? (A test double may stand in for a deployment stage: see
        ``calling.Deployed``.)"""
        return bool(self.options) or self.surface.mode != "default" or \
            bool(self.surface.promise) or self.surface.deployed

    def pairs_with(self, strategy: str) -> bool:
        return self.strategies is None or strategy in self.strategies

    def recipe_config(self) -> dict:
        return dict(self.options)


MODEL_STRATEGIES = ("models", "cast-roundtrip", "model-overflow", "shapes", "state")
FLOAT_STRATEGIES = ("models", "cast-roundtrip", "model-overflow", "special-functions", "decimal",
                    "shapes", "vision-ops", "decompositions", "state")

CATALOGUE: dict[str, Entry] = {e.name: e for e in (
    Entry("default", "torch.compile(model): static shapes, default mode, Python wrapper",
          Surface(name="default")),
    Entry("dynamic", "dynamic=True: kernels over symbolic sizes from the first compile",
          Surface(dynamic=True, name="dynamic"), cost=1.3),
    Entry("automatic-dynamic", "torch's default dynamic=None: a first call at another batch "
          "size, then the judged call on the recompiled symbolic-size kernel",
          Surface(automatic=True, name="automatic-dynamic"), cost=2.0),
    Entry("training", "forward and backward: the gradients judged like outputs",
          Surface(training=True, name="training"), strategies=FLOAT_STRATEGIES, cost=2.0),
    Entry("freezing", "inference of an eval module with freezing: weights folded as constants",
          Surface(name="freezing"), {"freezing": True}, strategies=MODEL_STRATEGIES,
          prior=1.5),
    Entry("cpp-gemm", "CPU inference as Intel's guides recommend: max-autotune with the C++ GEMM "
          "template and freezing (a heap overflow and a misread frozen weight were found here)",
          Surface(name="cpp-gemm"), {"max_autotune": True, "max_autotune_gemm_backends": "CPP",
                                     "freezing": True},
          devices=("cpu",), strategies=MODEL_STRATEGIES, needs=("cpp_gemm_template",),
          prior=3.0, cost=3.0),
    Entry("cpp-wrapper", "cpp_wrapper=True: the generated C++ wrapper instead of Python",
          Surface(name="cpp-wrapper"), {"cpp_wrapper": True}, cost=2.0),
    Entry("export", "torch.export: the exported program after its decompositions "
          "(ExportedProgram.module()), no compiler", Surface(path="export", name="export"),
          needs=("export",), prior=1.5, cost=1.5),
    Entry("aoti", "AOTInductor: torch.export, then a package built with the weights as constants, "
          "loaded and run (torch._inductor.aoti_compile_and_package, aoti_load_package)",
          Surface(path="aoti", name="aoti"), needs=("aoti",), prior=2.0, cost=15.0),
    Entry("reduce-overhead", "mode=reduce-overhead: CUDA graphs",
          Surface(mode="reduce-overhead", name="reduce-overhead"), devices=("cuda",)),
    Entry("triton-templates", "max-autotune's Triton GEMM and conv templates (no CUDA graphs)",
          Surface(mode="max-autotune-no-cudagraphs", name="triton-templates"),
          {"max_autotune_gemm_backends": "TRITON"}, devices=("cuda",),
          strategies=MODEL_STRATEGIES, cost=3.0),
    Entry("strict", "numerics='strict': eager's pointwise math and reduction order, promised",
          Surface(promise="strict", name="strict"), {"numerics": "strict"}, devices=("cuda",)),
    Entry("batch-invariant", "batch_invariant=True: a row's result does not depend on its batch",
          Surface(promise="batch-invariant", name="batch-invariant"), {"batch_invariant": True},
          devices=("cuda",)),
)}


# Every Inductor option a surface of the catalogue deploys: what triage takes back one at a time.
DEPLOYED = frozenset(key for entry in CATALOGUE.values() for key in entry.options)


def have(need: str) -> bool:
    """Does this torch (and machine) have ``need``: the C++ GEMM template, which runs only where
    the CPU has a micro-kernel for it (AVX2 or AVX-512)?"""
    if need in ("export", "aoti"):
        import torch

        return hasattr(torch, "export") and hasattr(torch.export, "export") and (
            need == "export" or all(hasattr(torch._inductor, name) for name in (
                "aoti_compile_and_package", "aoti_load_package")))
    if need == "cpp_gemm_template":
        import importlib.util

        import torch

        if importlib.util.find_spec("torch._inductor.codegen.cpp_gemm_template") is None:
            return False
        checks = [getattr(torch.cpu, name, None) for name in ("_is_avx512_supported",
                                                              "_is_avx2_supported")]
        return any(check is not None and check() for check in checks)
    raise ValueError(f"unknown need {need!r}")


def unavailable(entry: Entry, device: str, backend: str) -> str:
    """Why ``entry`` cannot run here ('' when it can): another device, an option or template
    this torch lacks, or a backend that is not Inductor."""
    from fuzzer.execute import config

    if Device(device).type not in entry.devices:
        return f"{'/'.join(entry.devices)} only"
    if entry.inductor_only and backend != "inductor":
        return f"Inductor's; backend {backend} is not"
    missing = config.missing(entry.options)
    if missing:
        return f"not in this torch: {', '.join(missing)}"
    for need in entry.needs:
        if not have(need):
            return f"this torch or CPU has no {need.replace('_', ' ')}"
    return ""


def available(device: str, backend: str, names: list[str] | None = None
              ) -> tuple[list[Entry], dict[str, str]]:
    """The catalogue's entries (or those named) that run on ``device`` with ``backend``, and
    why each of the others does not."""
    chosen = [CATALOGUE[n] for n in (names or list(CATALOGUE))]
    why = {e.name: unavailable(e, device, backend) for e in chosen}
    return [e for e in chosen if not why[e.name]], {n: w for n, w in why.items() if w}


def pinned(surface: Surface) -> Surface:
    """A surface given by flags: no catalogue name (its options are the campaign's own)."""
    return replace(surface, name="")

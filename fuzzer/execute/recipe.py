"""How a case is compiled and judged, as one value: the ``Recipe``.

A recipe is the backend (a registered name, or a ``module:function`` the user trusted), the
Inductor options (``config``, from the allowlist), the compile surface (``surface``: dynamic
shapes, mode, training), the judging policy (float64's rule, or eager parity) and the
torch.backends flags eager and compiled run under (``flags``: TF32, reduced-precision reductions,
a pin of eager's attention kernel; ``None`` in a case file from before they were recorded). The
command line builds one per campaign and checks it there; cases, tasks and campaign settings carry
it; case files and the pipe to a worker hold it as plain fields (``fields``), read back through
``from_fields``, which checks every one of them. Triage varies it one knob at a time
(``with_knob``), and ``fresh`` is the one spelling of "compile afresh, no cache hits".

A ``module:function`` backend imports code, so it is used only when the user named it on the
command line (``--backend`` of ``run``/``nightly``, or ``--trust-backend``), which puts it in
``NUMFUZZ_TRUST_BACKENDS`` for this process and its children; never from a file alone.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from fuzzer.errors import CaseError
from fuzzer.execute import config as inductor_options
from fuzzer.execute.flags import Flags
from fuzzer.execute.surface import Entry, Surface
from fuzzer.judge.kinds import POLICIES

BUILTIN_BACKENDS = ("inductor", "aot_eager", "eager")
TRUST_ENV = "NUMFUZZ_TRUST_BACKENDS"  # module:function backends the user named themselves
# A compile that cannot be a cache hit: as a config patch inside a worker, and as the environment
# of a worker started for it (the on-disk caches do not key on every variable a knob sets).
FRESH_CONFIG = {"force_disable_caches": True}
FRESH_ENV = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}


@dataclass(frozen=True)
class Recipe:
    """Backend, Inductor options, compile surface and judging policy: everything about how a
    case is run besides its program, inputs and device."""

    backend: str = "inductor"
    config: dict = field(default_factory=dict)  # torch._inductor.config overrides (allowlisted)
    surface: Surface = Surface()
    policy: str = "float64"  # kinds.POLICIES: what a discrete mismatch is judged against
    flags: Flags | None = Flags()  # torch.backends flags (execute.flags); None: not recorded

    # ------------------------------------------------------------ as data

    @classmethod
    def from_fields(cls, backend: Any = "inductor", config: Any = None, surface: Any = None,
                    policy: Any = "float64", flags: Any = None, *,
                    trusted: bool = False) -> Recipe:
        """The recipe plain fields describe, each checked; CaseError naming the first bad one.
        ``trusted``: the fields come from this numfuzz (a task from its parent), so a
        ``module:function`` backend is not asked for again. No ``flags``: not recorded."""
        if policy not in POLICIES:
            raise CaseError(f"policy {str(policy)[:40]!r} is not one of {', '.join(POLICIES)}")
        name = str(backend) if trusted else check_backend(backend)
        return cls(name, inductor_options.check(config or {}), Surface.from_dict(surface or {}),
                   policy, None if flags is None else Flags.from_dict(flags))

    def fields(self) -> dict:
        """Plain data: what a case file or a task records (``from_fields`` reads it back)."""
        return {"backend": self.backend, "config": dict(self.config),
                "surface": self.surface.to_dict(), "policy": self.policy,
                "flags": None if self.flags is None else self.flags.to_dict()}

    # ------------------------------------------------------------ variations

    def with_knob(self, config: dict | None = None, backend: str | None = None,
                  flags: dict | None = None, surface: dict | None = None) -> Recipe:
        """This recipe with ``config`` patched on top of its own, ``backend`` (if given)
        instead of its own, ``flags`` (field -> value) and its surface's fields ``surface``
        changed: one knob of triage's ablation."""
        changed = self.flags
        if flags:
            changed = (self.flags if self.flags is not None else Flags()).with_changes(flags)
        return replace(self, backend=backend or self.backend,
                       config={**self.config, **(config or {})}, flags=changed,
                       surface=replace(self.surface, **surface) if surface else self.surface)

    def on(self, entry: Entry) -> Recipe:
        """This recipe on a catalogue surface: its compile arguments, and its Inductor options
        under the campaign's own (``--inductor-config`` still has the last word)."""
        return replace(self, surface=entry.surface, config={**entry.options, **self.config})

    def fresh(self) -> Recipe:
        """The same, compiled afresh (no FX or Inductor cache hits): what every k/k check,
        knob and recheck uses, so a cached kernel never stands in for the compiler."""
        return self.with_knob(FRESH_CONFIG)

    # ------------------------------------------------------------ use

    @property
    def warms_up(self) -> bool:
        """Does a worker for this recipe pay Inductor's first compile up front?"""
        return self.backend == "inductor"

    def check_for(self, device: str) -> None:
        """CaseError when this recipe cannot compile on ``device`` (``Surface.check_for``)."""
        self.surface.check_for(device, self.backend)

    def compile(self, model: Callable) -> Callable:
        """``torch.compile`` of ``model`` as this recipe says (the config is patched around
        the run, ``execute.runner``), or the deployment path its surface names
        (``calling.Deployed``: built at the first call; a ``module:function`` backend stands in
        for a stage there, as a test double)."""
        import torch

        from fuzzer.execute import calling

        if self.surface.deployed:
            hook = resolve_backend(self.backend) if ":" in self.backend else None
            return calling.Deployed(model, self.surface.deployment.how(), hook)
        return torch.compile(model, backend=resolve_backend(self.backend),
                             **self.surface.compile_kwargs())

    def label(self) -> str:
        """How a person reads it: ``inductor, static``, ``inductor, dynamic, training``."""
        return f"{self.backend}, {self.surface.label()}"


def resolve_backend(name: str) -> str | Callable:
    """A torch.compile backend: a registered name, or ``module:attr`` (test doubles, custom
    ones) imported here; the caller checked it (``check_backend``)."""
    if ":" not in name:
        return name
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def check_backend(name: Any) -> str:
    """``name`` if it is a backend this process may use, else CaseError saying how to trust it.

    A registered name (``inductor``, ``aot_eager``, ``eager``, what ``list_backends`` gives) is
    data. ``module:function`` imports code, so it is used only when the user named it themselves.
    """
    if not isinstance(name, str) or not name:
        raise CaseError(f"backend must be a name, got {str(name)[:80]!r}")
    if name in BUILTIN_BACKENDS:
        return name
    if ":" in name:
        if name in trusted_backends():
            return name
        raise CaseError(f"backend {name[:80]!r} is code (module:function) named by a file; "
                        f"numfuzz imports it only if you trust it: numfuzz --trust-backend "
                        f"{name[:80]} <command> ...")
    import torch

    if name in torch._dynamo.list_backends(exclude_tags=()):
        return name
    raise CaseError(f"unknown backend {name[:80]!r}: use {', '.join(BUILTIN_BACKENDS)} or another "
                    "name torch._dynamo.list_backends() gives")


def trusted_backends() -> set[str]:
    return {n for n in os.environ.get(TRUST_ENV, "").split(",") if n}


def trust_backend(name: str) -> None:
    """Let this process and its children use ``module:function`` backend ``name``."""
    if ":" in name:
        os.environ[TRUST_ENV] = ",".join(sorted(trusted_backends() | {name}))

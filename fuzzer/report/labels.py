"""Which layer of the compiler a cause is in, as a triager decides it, and the labels they would
put on its issue: the one rule a draft's backend isolation and labels come from.

A triager of a ``torch.compile`` report runs it under ``backend="eager"`` (Dynamo's graph as it
is), ``backend="aot_eager"`` (AOTAutograd too, no Inductor) and Inductor: the first backend
that shows the divergence names the layer. Triage (``triage.attribute``) runs the first two as
knobs, fresh and k times each; a deployment's stages (``export``, AOTInductor's package) name
their own layer. Every draft gets ``oncall: pt2`` and ``topic: fuzzer`` (numfuzz found it).
"""

from __future__ import annotations

from dataclasses import dataclass

from fuzzer.corpus.case import Case
from fuzzer.execute.surface import DEPLOYMENTS
from fuzzer.triage.attribute import AOT_EAGER, EAGER_BACKEND, Attribution

ALWAYS = ("oncall: pt2", "topic: fuzzer")
# The backends' layers; a deployment's stage names its own (``surface.Deployment``).
LAYERS = {"dynamo": ("Dynamo (it shows with `backend=\"eager\"`)", "module: dynamo"),
          "aotautograd": ("AOTAutograd (it shows with `aot_eager`, not with `eager`)",
                          "module: pt2-dispatcher"),
          "inductor": ("Inductor (it shows with Inductor alone)", "module: inductor"),
          **{d.path: (d.layer, d.triage_label) for d in DEPLOYMENTS.values() if d.deployed}}


@dataclass(frozen=True)
class Isolation:
    """What each backend did to the divergence (a knob's outcome, '' where not run) and the
    layer that the first one showing it names."""

    eager: str
    aot_eager: str
    layer: str  # dynamo, aotautograd, inductor, a deployment's stage, or '' (not told apart)

    def labels(self) -> list[str]:
        label = LAYERS.get(self.layer, ("", ""))[1]
        return [*([label] if label else []), *ALWAYS]


def isolate(case: Case, attribution: Attribution | None) -> Isolation:
    """The layer a cause is in, from its attribution: a deployment's first stage showing it,
    else the first backend that persists (eager; aot_eager where eager was run and did not
    show it), else Inductor where aot_eager made it vanish; '' where nothing tells (an older
    attribution has no eager run: aot_eager persisting there is Dynamo's or AOTAutograd's)."""
    outcomes = {k.knob: k.outcome for k in attribution.knobs} if attribution else {}
    eager, aot_eager = outcomes.get(EAGER_BACKEND, ""), outcomes.get(AOT_EAGER, "")
    first = attribution.first_stage() if attribution is not None else None
    if first is not None:
        return Isolation(eager, aot_eager, first.path)
    if eager == "persists":
        layer = "dynamo"
    elif aot_eager == "persists" and eager == "vanishes":
        layer = "aotautograd"
    elif aot_eager == "vanishes":
        layer = "inductor"
    else:
        layer = ""
    return Isolation(eager, aot_eager, layer)


def isolation_text(case: Case, attribution: Attribution | None) -> str:
    """The draft's backend isolation, in a line, and the labels."""
    found = isolate(case, attribution)
    said = {"persists": "shows it", "vanishes": "does not show it", "changes":
            "shows another divergence", "unstable": "shows it in some runs",
            "error": "could not run it", "n/a": "does not apply here", "": "not run"}
    where = LAYERS.get(found.layer, ("not told apart", ""))[0]
    surface, backend = case.recipe.surface, case.recipe.backend
    own = f"the case's own path ({surface.path})" if surface.deployed else \
        "Inductor" if backend == "inductor" else f"its own backend ({backend})"
    eager = said.get(found.eager, found.eager)
    if found.eager == "n/a" and found.aot_eager == "vanishes":  # ``attribute._eager_after``
        eager = "was not run (`aot_eager` does not show it: the layer is told without it)"
    return (f"**Backend isolation** (fresh compiles, majority of k runs): `backend=\"eager\"` "
            f"{eager}, `backend=\"aot_eager\"` "
            f"{said.get(found.aot_eager, found.aot_eager)}, {own} shows it: the layer is "
            f"{where}. Labels a triager would give: "
            + ", ".join(f"`{label}`" for label in found.labels()) + ".")

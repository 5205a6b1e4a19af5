"""A root cause's signature: what stays the same when one bug is found again, through another
generated graph, another head, another budget or another ``--knobs`` list.

The fields (``signature_fields``):
- ``family``: the kind's family. Every discrete head is one family (``flip``): the head is the
  amplifier, not the cause, so a quantize and a ``gt`` fed by the same wrong value are one bug;
- ``device``: the device type (``cpu``, ``cuda``), never the GPU model; ``backend``: the compiler
  (Inductor, or a custom one);
- ``core``: the float computation feeding the diverging output, as op labels in canonical order
  (``float_core``): the head, any float step before it (ceil, round, sign) and integer
  post-processing are cut off (but a step that reads an input directly, ``x // 0.1`` under the
  head, is the core: nothing else computes); constants, shapes, dtypes, node ids and input values
  never enter;
- ``vanishes_with``: the knobs of the full set (``triage.attribute.KNOBS``) that make it vanish,
  each decided by a majority of k fresh runs (``attribute``), whatever ``--knobs`` a user passed;
- ``error``: for crashes and timeouts, the exception type and the innermost torch frames;
- ``gradient``: present (true) for a diverging gradient (``--training``), whose core is every op
  the gradient flows back through from the outputs to its input;
- ``needs``: present where the case ran on a surface of the catalogue and taking back one of its
  options (freezing, the C++ GEMM template, automatic dynamic …) makes it vanish: the options it
  needs (``attribute.surface_knobs``);
- ``layout``: present where taking back one layout fact of its inputs makes it vanish (weights
  views into one flat buffer, an input at a storage offset or non-contiguous, views passed beside
  their input: ``gen.domains.LAYOUT_FACTS``): the facts it needs;
- ``stage``: present for a deployment (torch.export, AOTInductor): the first stage that shows it
  (export, its decompositions, Inductor on the exported graph, or AOTInductor's own package).

Where the divergence first appears (``triage.locate``, the attribution's ``root``) is recorded
with the cause, not hashed: the known list and the value class read it (its mechanism).

One bug, one signature: the nightly and ``numfuzz triage`` take a cause the same way
(``cause_of``): on the case minimized to the minimizer's fixpoint, over the full knob set, k fresh
runs per knob (``SIGNATURE_K`` by default for both). ``signature_caveat`` says when a case given
to ``triage`` is not such a case, so its signature may not be the one a night gives.

The bisector's culprit is recorded with a finding and shown in its draft, but it is not hashed:
it is only run for new causes (minutes each, ``--no-bisect`` skips it), its application numbers
depend on the graph, and on the CPU the knob that makes a cause vanish names the same subsystem.

Near matches merge (``same_cause``): two causes with the same family, device, vanishing knobs and
error are one when one core's ops are a subsequence of the other's (a minimizer that stopped early
leaves a longer core around the same culprit), ops compared by name, not spelling (``add`` and
``add_scalar``); the smaller core names the cause. An empty core
(the head's own kernel is wrong) only matches another empty one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence

from fuzzer.corpus.case import Case
from fuzzer.device import Device
from fuzzer.execute.pool import Runners, Spread
from fuzzer.ir import ops
from fuzzer.ir.graph import canonical_order
from fuzzer.judge import semantics
from fuzzer.judge.key import error_type
from fuzzer.judge.kinds import RAISED, Kind, facts
from fuzzer.judge.verdict import Verdict
from fuzzer.triage import value
from fuzzer.triage.attribute import EAGER_BACKEND, KNOBS, Attribution, Knob, attribute
from fuzzer.triage.known import bare
from fuzzer.triage.locate import locate

# The knobs a signature reads. Not the eager backend's: whatever vanishes with aot_eager
# vanishes with it too, so it tells Dynamo's causes from AOTAutograd's only for the draft's
# labels, and leaving it out keeps every signature recorded before it was added.
FULL_SET = frozenset(k.name for k in KNOBS) - {EAGER_BACKEND}
SIGNATURE_K = 3  # fresh runs per knob, by majority: the nightly's default and triage's


def graph_dtype(case: Case) -> str:
    """The float dtypes the graph's inputs carry (what the computation runs in)."""
    found = sorted({case.graph.node(n).dtype for n in case.graph.input_ids()
                    if "float" in case.graph.node(n).dtype})
    return "+".join(found) or case.dtype


def float_core(case: Case) -> list[str]:
    """The op labels, in canonical order, of what computes the float value the diverging head
    reads (for a float output, of what computes the output)."""
    graph, verdict = case.graph, case.verdict
    node = verdict.node if verdict is not None and verdict.node in graph else None
    if node is not None and _is_gradient(verdict):  # what the input's gradient flows back through
        keep = graph.descendants(node) & \
            set().union(*(graph.ancestors(o) | {o} for o in graph.outputs))
        return [graph.node(n).label
                for n in canonical_order(graph) if n in keep]
    if node is None:
        return [graph.node(n).label
                for n in canonical_order(graph) if not graph.node(n).is_input]
    if graph.node(node).is_input:  # a written input's state: what its last write computed (an
        node = graph.last_write(node) or node  # input itself has no ops, and every such
        # divergence would share one empty core)
    source = semantics.evidence_source(graph, node)
    if isinstance(source, tuple):  # a discrete head: its float input is where the cause ends
        head_input = graph.node(source[0]).inputs[0]
        # ... unless nothing computes it but the float steps the head reads (x // 0.1 of an
        # input): then the steps are the computation, and their labels the core.
        computed = not graph.node(head_input).is_input
        node = head_input if computed or source[0] == node else source[0]
    keep = graph.ancestors(node) | {node}
    return [graph.node(n).label
            for n in canonical_order(graph) if n in keep and not graph.node(n).is_input]


def signature_fields(case: Case, attribution: Attribution | None) -> dict:
    verdict = case.verdict
    kind = verdict.kind if verdict else "none"
    fields: dict = {
        "family": facts(kind).family,
        "device": Device(case.device).type,
        "backend": case.recipe.backend,
        "core": float_core(case),
        "vanishes_with": sorted(set(attribution.vanishing()) & FULL_SET) if attribution else [],
    }
    if verdict and kind == Kind.MEMORY:  # however the process died this time
        fields["error"] = [Kind.MEMORY.value]
    elif verdict and kind in RAISED:
        fields["error"] = [error_type(verdict.message), *verdict.frames]
    if _is_gradient(verdict):  # a backward kernel's bug, not the forward's (older keys unchanged)
        fields["gradient"] = True
    aliased = aliased_arguments(case.graph)
    if aliased:  # arguments sharing storage: the path AOTAutograd takes for them is the cause's
        fields["aliased_arguments"] = aliased
    needs = attribution.needs() if attribution else []
    if needs:  # the options of its surface it needs (older keys, and default ones, unchanged)
        fields["needs"] = sorted(needs)
    layout = attribution.layout() if attribution else []
    if layout:  # how its inputs are stored, where that tells it (older keys unchanged)
        fields["layout"] = sorted(layout)
    stage = attribution.stage() if attribution else ""
    if stage:  # a deployment's stage where it appears (torch.export, AOTInductor)
        fields["stage"] = stage
    return fields


def aliased_arguments(graph) -> str:
    """How a program uses arguments that share storage (``Graph.passed_views``): ``output``
    where it returns a view of one (AOTAutograd regenerates such an output from the shared
    base), ``read`` where it only reads and writes through them, '' where it has none."""
    passed = graph.passed_views()
    if not passed:
        return ""
    bases = {graph.node(v).inputs[0] for v in passed}
    views = [o for o in graph.outputs if o not in bases and graph.root(o) in bases]
    return "output" if views else "read"


def _is_gradient(verdict: Verdict | None) -> bool:
    out = verdict.diverging if verdict is not None else None
    return out is not None and out.details.gradient_of is not None


def mechanism_of(attribution: Attribution | None) -> dict:
    """What the known list and the value class read of where a cause first diverges
    (``locate``): the op, the family it shows there, the kind, whether confirmed; {} where
    not located."""
    root = (attribution.root if attribution is not None else None) or {}
    if root.get("node") is None:
        return {}
    kind = root.get("kind", "")
    return {"op": root.get("label", ""), "family": facts(kind).family, "kind": kind,
            "confirmed": bool(root.get("confirmed"))}


def match_fields(case: Case, attribution: Attribution | None, fields: dict) -> dict:
    """What the known list and the ledger match a cause by (``known.Conditions``): its
    signature fields and, not hashed, where it first diverges, its value class, its crash
    message and its signature."""
    root = mechanism_of(attribution)
    return {**fields, "root": root, "value_class": value.classify(case, root).number,
            "message": said(case.verdict), "signature": signature_of(fields)}


def said(verdict: Verdict | None) -> str:
    """What a verdict says in words (``Conditions.message_any`` reads it): a crash's message,
    else the reason its diverging output gives (an aliasing divergence's ``output 0 shares
    storage with x0 in eager, with no input compiled``)."""
    if verdict is None:
        return ""
    out = verdict.diverging
    return verdict.message or (out.details.reason if out is not None else "") or ""


def signature_of(fields: dict) -> str:
    """16 hex digits over the fields: equal for the same cause found twice."""
    text = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def signature(case: Case, attribution: Attribution | None) -> str:
    return signature_of(signature_fields(case, attribution))


def cause_of(case: Case, pool: Runners, *, knobs: Sequence[Knob] = KNOBS,
             k: int = SIGNATURE_K, stop: Callable[[], bool] | None = None,
             progress: Callable[[str], None] | None = None, spread: Spread | None = None,
             urgent: bool = False) -> tuple[Attribution, dict]:
    """The one way a cause is taken, by the nightly and by ``numfuzz triage``: ``case`` (the
    minimized one) attributed over ``knobs`` (the full set, or more), k fresh runs each by
    majority; its attribution and signature fields. OutOfTime when ``stop`` says so first.
    ``spread``/``urgent``: knob runs shared out over idle lanes (``attribute``)."""
    missing = FULL_SET - {knob.name for knob in knobs}
    if missing:
        raise ValueError(f"a cause is taken over the full knob set; missing {sorted(missing)}")
    attribution = attribute(case, pool, knobs, progress, k=k, stop=stop, spread=spread,
                            urgent=urgent)
    if attribution.reproduces and case.verdict is not None and case.verdict.kind not in RAISED:
        found = locate(case, pool.get(case.device), stop=stop,
                       progress=(lambda text: progress(f"locate: {text}")) if progress else None)
        attribution.root = found.to_dict()
    return attribution, signature_fields(case, attribution)


def signature_caveat(case: Case) -> str:
    """Why ``case``'s signature may differ from the one a night gives it ('' when it would not):
    the nightly signs the case minimized to the minimizer's fixpoint."""
    if case.origin.get("fixpoint") is True:
        return ""
    if "minimized_from" in case.origin:
        return ("this case was not minimized to the minimizer's fixpoint (a budget stopped it): "
                "minimize it again to get the signature a night gives it")
    return ("this case is not minimized: the nightly signs the case minimized to the "
            "minimizer's fixpoint (numfuzz minimize CASE, then triage its case.pt)")


def same_cause(a: dict, b: dict) -> bool:
    """One root cause: equal fields, or equal but for one core being a subsequence of the other;
    cores compare by op, not spelling (``known.bare``: ``interpolate_size`` and
    ``interpolate_scale`` are one op, as the known list reads them), so one bug reached through
    two spellings of its op is one draft."""
    if {k: v for k, v in a.items() if k != "core"} != {k: v for k, v in b.items() if k != "core"}:
        return False
    short, long = sorted(([bare(op) for op in a["core"]], [bare(op) for op in b["core"]]), key=len)
    if not short:  # a head whose own kernel is wrong: no float computation to share
        return not long
    rest = iter(long)
    return all(op in rest for op in short)


# ------------------------------------------------------------------ one cause per mechanism

# The families one wrong value shows as: the same op's divergence may be a NaN in one program, a
# loss of accuracy in another, a flipped code in a third.
VALUE_FAMILIES = ("flip", "nonfinite", "accuracy")
# What tells a mechanism, beside where it first goes wrong: the layer or stage, the knobs and
# options that make it vanish, the layout facts, arguments that alias, a gradient.
TELLING = ("device", "backend", "vanishes_with", "needs", "stage", "layout",
           "aliased_arguments", "gradient")
SURFACE_ONLY = ("needs", "stage")  # what a crash's surface adds: one crash on every surface


def op_class(label: str) -> str:
    """What an op does to storage, where that is all a mechanism needs of it: ``write`` (an
    in-place op or a store), ``view`` (a view of its input), ``pointwise``; any other op is
    itself (``bare``)."""
    spec = ops.REGISTRY.get(label)
    if spec is None:
        return bare(label)
    if spec.mutates:
        return "write"
    if spec.alias is not None:
        return "view"
    return "pointwise" if spec.elementwise else bare(label)


def mechanism_key(fields: dict, root: dict | None) -> dict | None:
    """What one mechanism keeps when it is found through another view, another elementwise op
    that carries it out, or as NaN instead of a loss of accuracy (``fields``: signature fields;
    ``root``: where it first diverges, ``mechanism_of``): None where that cannot be told (no
    first divergent op located and nothing structural that tells it).

    - A crash or timeout is its exception and innermost frames, the knobs and layout facts that
      tell it and its ops (views left out: a C++ compile error is raised by the same frames
      whatever code failed to compile), whatever surface or stage it showed on.
    - A cause told by structure (layout facts, arguments that alias, an aliasing divergence)
      is what its first divergent op does to storage (``op_class``: a write), or, unlocated,
      the classes of its core's ops, views left out (none left: not told): which view or which
      elementwise op carries it does not make another bug.
    - Any other divergence (a value, a dtype or shape) is the op where it first goes wrong, by
      name: a vectorized ``erf`` and a vectorized ``expm1`` are two bugs, though one knob makes
      both vanish.
    """
    family = fields.get("family", "")
    if family in ("crash", "timeout"):  # whatever surface or stage it showed on
        return {"family": family, "error": fields.get("error"),
                **{name: fields.get(name) for name in TELLING if name not in SURFACE_ONLY},
                # a C++ compile error is raised by the same frames whatever the code: its ops
                "op": sorted({bare(op) for op in fields.get("core", [])
                              if op_class(op) != "view"})}
    key = {name: fields.get(name) for name in TELLING}
    key["family"] = "value" if family in VALUE_FAMILIES else family
    first = (root or {}).get("op")
    structural = bool(fields.get("layout") or fields.get("aliased_arguments")) or \
        family == "aliasing"
    if structural:
        key["op"] = [op_class(first)] if first else \
            sorted({op_class(op) for op in fields.get("core", [])} - {"view"})
    elif first:
        key["op"] = [bare(first)]
    return key if key.get("op") else None  # nothing that tells it: not told apart


def same_mechanism(a: dict, a_root: dict | None, b: dict, b_root: dict | None) -> bool:
    """One mechanism (``mechanism_key``): two causes that differ only in which view or which
    elementwise op carries the divergence, or in whether it shows as NaN or as a loss of
    accuracy, are one cause with variants (one draft)."""
    key = mechanism_key(a, a_root)
    return key is not None and key == mechanism_key(b, b_root)

"""A bug's signature: what stays the same when the same bug is found twice.

It keys on kind, device type, backend, dtype, the graph's canonical op chain (and which output
diverged) and the set of knobs that make the divergence vanish; it is independent of node ids,
constants, shapes and input values.
"""

from __future__ import annotations

import hashlib
import json

from fuzzer.corpus.case import Case
from fuzzer.ir.graph import canonical_order, op_chain
from fuzzer.judge.key import error_type
from fuzzer.triage.attribute import Attribution, device_type


def graph_dtype(case: Case) -> str:
    """The float dtypes the graph's inputs carry (what the computation runs in)."""
    found = sorted({case.graph.node(n)["dtype"] for n in case.graph.input_ids()
                    if "float" in case.graph.node(n)["dtype"]})
    return "+".join(found) or case.dtype


def signature_fields(case: Case, attribution: Attribution | None) -> dict:
    verdict = case.verdict
    order = canonical_order(case.graph)
    fields: dict = {
        "kind": verdict.kind if verdict else "none",
        "device": device_type(case.device),
        "backend": case.backend,
        "dtype": graph_dtype(case),
        "ops": op_chain(case.graph),
        "output": order.index(verdict.node) if verdict and verdict.node in order else None,
        "vanishes_with": attribution.vanishing() if attribution else [],
    }
    if verdict and verdict.kind in ("crash", "timeout"):
        fields["error"] = error_type(verdict.message)
    return fields


def signature(case: Case, attribution: Attribution | None) -> str:
    """16 hex digits over ``signature_fields``: equal for the same bug found twice."""
    text = json.dumps(signature_fields(case, attribution), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]

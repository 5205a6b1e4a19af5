"""Lifting: generic calls that a registry op renders exactly become that op, and written-out
encodings become registry heads.

Registry ops are what mutation, the slicing pass and the heads' boundary distances know. Which
torch calls an op captures, and how a call's arguments become its attrs, is the op registry's to
say (``OpSpec.captures`` and ``OpSpec.lift``); anything that would change a single bit stays
generic (capture's bit-for-bit check enforces it).
"""

from __future__ import annotations

from fuzzer.ir import ops
from fuzzer.ir.graph import Graph


def generic_ops(graph: Graph) -> int:
    """How many nodes were kept as generic calls (outside the registry)."""
    return sum(graph.node(n).op == "call" for n in graph.op_ids())


def recognize(target: str, inputs: list[int], attrs: dict,
              graph: Graph) -> tuple[str, list[int], dict] | None:
    """The registry op (its name, inputs and attrs) that renders this captured call, if any:
    every tensor input floating, and of one dtype where there are several."""
    dtypes = [graph.node(i).dtype for i in inputs]
    if "pick" in attrs or not inputs or not all(d in ops.FLOAT_DTYPES for d in dtypes) \
            or len(set(dtypes)) > 1:
        return None
    for spec in ops.capturing(target):
        lift = spec.lift or ops.lift_exact(spec.arity)
        lifted = lift(attrs["args"], attrs["kwargs"])
        if lifted is not None:
            return spec.name, inputs, lifted
    return None


def fuse_heads(graph: Graph) -> None:
    """Written-out encodings become registry heads, which know their discontinuity.

    ``(clamp(ceil(log2(|x| + eps)), -127, 127) + 127).to(uint8)`` is the E8M0 head and
    ``sign(x).to(int8)`` the sign head: with them the oracle can say how far float64 sat from
    the boundary. Only exact matches fuse; every intermediate must feed nothing else.
    """
    for out in list(graph.outputs):
        chain = _chain_back(graph, out, 7)
        ops_ = [graph.node(n).label for n in chain]
        if ops_[-2:] == ["sign", "Tensor.to"] and _casts_to(graph, chain[-1], "int8"):
            _fuse(graph, chain[-2:], "sign_int8", {})
        elif ops_ == ["abs", "add_scalar", "log2", "ceil", "clamp", "add_scalar", "Tensor.to"] \
                and _casts_to(graph, chain[-1], "uint8") and _e8m0_constants(graph, chain):
            eps = graph.node(chain[1]).attrs["value"]
            _fuse(graph, chain, "e8m0", {"eps": float(eps)})


def _chain_back(graph: Graph, node: int, length: int) -> list[int]:
    chain = [node]
    while len(chain) < length:
        inputs = graph.node(chain[0]).inputs
        if len(inputs) != 1 or graph.node(inputs[0]).is_input:
            break
        chain.insert(0, inputs[0])
    return chain


def _casts_to(graph: Graph, node: int, dtype: str) -> bool:
    attrs = graph.node(node).attrs
    return list(attrs.get("args", ())) == [{"in": 0}, {"dtype": dtype}] and not attrs.get("kwargs")


def _e8m0_constants(graph: Graph, chain: list[int]) -> bool:
    clamp, bias = graph.node(chain[4]).attrs, graph.node(chain[5]).attrs
    return (clamp["lo"], clamp["hi"], bias["value"]) == (-127, 127, 127) and \
        isinstance(graph.node(chain[1]).attrs["value"], float)


def _fuse(graph: Graph, chain: list[int], op: str, attrs: dict) -> None:
    if any(len(graph.consumers(n)) != 1 or n in graph.outputs for n in chain[:-1]):
        return
    source = graph.node(chain[0]).inputs[0]
    head = graph.add(op, [source], **attrs)
    graph.replace_uses(chain[-1], head)
    graph.remove_dead()

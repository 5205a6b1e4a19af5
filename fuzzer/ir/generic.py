"""Generic call nodes: any tensor op outside the registry, kept so that every user model loads.

A captured model may call ops the grammars never generate (``torch.cumsum``, ``x.view``,
``F.pad`` …). Such a node has op ``call`` and plain-data attributes:

- ``target``: ``F.name``, ``torch.name`` (also ``torch.special.`` / ``linalg.`` / ``fft.``),
  ``Tensor.name`` for a method, ``operator.name`` for Python's operators, or an operator of the
  dispatcher as the user called it, ``torch.ops.aten.avg_pool2d_backward`` (the packet) or
  ``torch.ops.aten.add.Tensor`` (one overload), any namespace registered in this torch but those
  that act outside the tensors (``OPS_DENIED``);
- ``args`` and ``kwargs``: constants, with tagged dicts for what JSON cannot say:
  ``{"in": k}`` the node's k-th tensor input, ``{"dtype": "float16"}``, ``{"slice": [a, b, c]}``,
  ``{"ellipsis": true}``, ``{"device_of": k}`` (the device of input k), ``{"memory_format": n}``;
- ``pick``: for ops returning several tensors (``chunk``, ``split``), which one;
- ``alias`` and ``mutates``: the tensor input its result shares storage with (or None) and the
  ones it writes in place, as capture saw the call do (``x.add_(y)``, ``x[i] = v``).

Case files are data, never code: a target must be a tensor op PyTorch itself lists as one
(``torch.overrides``), one of the few it files elsewhere (``UNLISTED``: ``F.hardswish``), a
deterministic factory (``FACTORIES``) or an operator from a short table, so a hostile file
cannot name ``torch.save`` or ``os.system``; a dispatcher operator must be one this torch has
registered (``torch.ops`` looks it up; nothing is imported for it). Shapes and dtypes are
inferred by calling the op on meta tensors (factories included: nothing is allocated), and a
result larger than ``MAX_NUMEL`` elements is refused.
"""

from __future__ import annotations

import functools
import importlib
import keyword
import operator
from collections.abc import Callable
from typing import Any

import torch

from fuzzer.ir import ops

# Python operators a traced model may use, and how they read in source.
OPERATORS: dict[str, str] = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "truediv": "{0} / {1}",
    "floordiv": "{0} // {1}", "mod": "{0} % {1}", "pow": "{0} ** {1}", "matmul": "{0} @ {1}",
    "neg": "-{0}", "pos": "+{0}", "invert": "~{0}", "and_": "{0} & {1}", "or_": "{0} | {1}",
    "xor": "{0} ^ {1}", "lt": "{0} < {1}", "le": "{0} <= {1}", "gt": "{0} > {1}",
    "ge": "{0} >= {1}", "eq": "{0} == {1}", "ne": "{0} != {1}", "getitem": "{0}[{1}]",
    # Writes: ``x[i] = v`` renders as the statement; ``x += y`` on a tensor is ``x.add_(y)``.
    "setitem": "{0}[{1}] = {2}", "iadd": "{0}.add_({1})", "isub": "{0}.sub_({1})",
    "imul": "{0}.mul_({1})", "itruediv": "{0}.div_({1})",
}
NAMESPACES = (("torch", "torch"), ("torch.special", "torch.special"),
              ("torch.linalg", "torch.linalg"), ("torch.fft", "torch.fft"),
              ("F", "torch.nn.functional"))  # later entries win: F.conv2d reads best
MAX_NUMEL = ops.MAX_NUMEL  # elements in one call's result: a file cannot make numfuzz allocate more
# Deterministic factories: pure functions of plain-data arguments (a model's torch.arange).
FACTORIES = ("arange", "zeros", "ones", "full", "linspace", "logspace", "eye", "scalar_tensor",
             "tril_indices", "triu_indices", "hann_window", "hamming_window", "blackman_window",
             "bartlett_window", "kaiser_window")
# Tensor ops that torch.overrides files under "ignored" although they compute on tensors like
# their neighbours: nn.Hardswish and nn.Hardsigmoid reach Dynamo's graph as these functions, the
# deprecated aliases still run, ``x.unflatten`` is a view and ``x.new_zeros`` a deterministic
# factory (``new_empty`` is not: uninitialized). Named one by one, so the rule stays "a real
# tensor op".
UNLISTED = {"F": ("hardswish", "hardsigmoid", "sigmoid", "tanh", "upsample", "upsample_bilinear",
                  "upsample_nearest"),
            "Tensor": ("unflatten", "new_zeros", "new_ones", "new_full")}
# The builtin a Python wrapper calls, recorded by Dynamo in its place (``F.pad`` reaches the graph
# as ``torch._C._nn.pad``): the same op with the same arguments, so it is named, and rendered, as
# the wrapper.
ALIASES = {"F.pad": ("torch._C._nn", "pad")}
# Dispatcher namespaces whose operators act outside the tensors they are given (profiling,
# collectives across processes): never called from a case file.
OPS_DENIED = ("profiler", "c10d", "_c10d_functional", "_c10d_functional_autograd", "_dtensor",
              "fsdp", "higher_order", "_quantized", "mkldnn_prepacked", "onednn")
# Overridable, yet not pure tensor computations: never rendered or called.
DENIED = {"backward", "register_hook", "register_post_accumulate_grad_hook", "retain_grad",
          "tolist", "numpy", "item", "data_ptr", "storage", "untyped_storage", "share_memory_",
          "pin_memory", "record_stream", "set_", "resize_", "resize_as_", "map_", "apply_",
          "map2_", "new_tensor", "cuda", "cpu", "to_sparse", "to_dense"}


@functools.cache
def _tables() -> tuple[dict[int, str], dict[str, Callable]]:
    """Canonical name by function identity, and function by name, for every allowed target."""
    overridable = {id(f) for fs in torch.overrides.get_overridable_functions().values()
                   for f in fs}
    by_id: dict[int, str] = {}
    by_name: dict[str, Callable] = {}
    for prefix, module_name in NAMESPACES:
        module = importlib.import_module(module_name)
        for name in dir(module):
            fn = getattr(module, name, None)
            if name.startswith("_") or name in DENIED or fn is None or id(fn) not in overridable:
                continue
            by_id[id(fn)] = f"{prefix}.{name}"
            by_name[f"{prefix}.{name}"] = fn
    for name in dir(torch.Tensor):
        fn = getattr(torch.Tensor, name, None)
        if not name.startswith("_") and name not in DENIED and fn is not None \
                and id(fn) in overridable:
            by_name[f"Tensor.{name}"] = fn
    for name in FACTORIES:  # no tensor argument, so torch.overrides does not list them
        by_id[id(getattr(torch, name))] = f"torch.{name}"
        by_name[f"torch.{name}"] = getattr(torch, name)
    spaces = {**{p: importlib.import_module(m) for p, m in NAMESPACES}, "Tensor": torch.Tensor}
    for prefix, names in UNLISTED.items():
        for name in names:
            fn = getattr(spaces[prefix], name, None)
            if callable(fn):  # a torch without it simply does not offer it
                by_id[id(fn)] = f"{prefix}.{name}"
                by_name[f"{prefix}.{name}"] = fn
    for name, (module_name, attr) in ALIASES.items():
        builtin = getattr(importlib.import_module(module_name), attr, None)
        if builtin is not None and name in by_name:
            by_id.setdefault(id(builtin), name)
    for name in OPERATORS:
        by_id[id(getattr(operator, name))] = f"operator.{name}"
        by_name[f"operator.{name}"] = getattr(operator, name)
    return by_id, by_name


def target_name(fn: object) -> str | None:
    """``F.gelu`` for the function object F.gelu, ``torch.ops.aten.add.Tensor`` for that
    overload (its packet without the overload); None for anything that is not an allowed op."""
    name = dispatcher_name(fn)
    return name if name is not None else _tables()[0].get(id(fn))


def dispatcher_name(fn: object) -> str | None:
    """``torch.ops.<namespace>.<op>[.<overload>]`` for a dispatcher operator an allowed
    namespace holds, as the user called it (a packet, or one of its overloads); else None."""
    ops_module = getattr(torch, "_ops", None)
    packet_type = getattr(ops_module, "OpOverloadPacket", None)
    overload_type = getattr(ops_module, "OpOverload", None)
    if packet_type is not None and isinstance(fn, packet_type):
        namespace, _, op = fn._qualified_op_name.partition("::")
        name = f"torch.ops.{namespace}.{op}"
    elif overload_type is not None and isinstance(fn, overload_type):
        namespace, _, op = fn._schema.name.partition("::")
        name = f"torch.ops.{namespace}.{op}.{fn._overloadname}"
    else:
        return None
    return name if namespace not in OPS_DENIED else None


def _dispatcher_op(target: str) -> Callable | None:
    """The dispatcher operator ``torch.ops.<namespace>.<op>[.<overload>]`` names, if this torch
    has registered it and its namespace is allowed; never an import."""
    parts = target.split(".")
    if parts[:2] != ["torch", "ops"] or len(parts) not in (4, 5) or \
            not all(p.isidentifier() and not p.startswith("__") for p in parts[2:]) or \
            parts[2] in OPS_DENIED:
        return None
    try:
        found = getattr(getattr(torch.ops, parts[2]), parts[3])
        if len(parts) == 5:
            found = getattr(found, parts[4])
    except (AttributeError, RuntimeError):
        return None
    return found if dispatcher_name(found) == target else None


def method_name(name: str) -> str | None:
    """``Tensor.view`` for the method ``view``; None for methods that are not allowed."""
    return f"Tensor.{name}" if f"Tensor.{name}" in _tables()[1] else None


def resolve(target: object) -> Callable:
    """The op a call target names; InvalidGraph for anything else (a file's value may be any)."""
    if isinstance(target, str):
        found = _dispatcher_op(target)
        if found is None:
            found = _tables()[1].get(target)
        if found is not None:
            return found
    raise ops.InvalidGraph(f"call target {target!r} is not a tensor op numfuzz may run")


# ---------------------------------------------------------------- values: source and objects


def _tag(value: dict) -> tuple[str, Any]:
    if len(value) != 1:
        raise ops.InvalidGraph(f"malformed call argument {value!r}")
    return next(iter(value.items()))


def source(value: object, args: list[str], index: bool = False) -> str:
    """Python source for an encoded argument; ``index`` renders slices as ``a:b`` (in ``[]``)."""
    if isinstance(value, dict):
        tag, v = _tag(value)
        if tag == "in":
            return args[int(v)]
        if tag == "device_of":
            return f"{args[int(v)]}.device"
        if tag in ("dtype", "memory_format"):
            _named(tag, v)
            return f"torch.{v}"
        if tag == "ellipsis":
            return "..."
        if tag == "slice":
            a, b, c = (("" if x is None else ops.literal(x)) for x in v)
            if not index:
                return f"slice({a or None}, {b or None}, {c or None})"
            return f"{a}:{b}" + (f":{c}" if c else "")
        raise ops.InvalidGraph(f"unknown call argument tag {tag!r}")
    if isinstance(value, (list, tuple)):
        items = [source(v, args, index) for v in value]
        if index:
            return ", ".join(items) + ("," if len(items) == 1 else "")
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if value is None or isinstance(value, (bool, int, float, str)):
        return ops.literal(value)
    raise ops.InvalidGraph(f"call argument {value!r} is not plain data")


def _named(tag: str, name: object) -> torch.dtype | torch.memory_format:
    kind = torch.dtype if tag == "dtype" else torch.memory_format
    value = getattr(torch, str(name), None)
    if not isinstance(value, kind):
        raise ops.InvalidGraph(f"unknown {tag} {name!r}")
    return value


def build(value: object, tensors: list[torch.Tensor]) -> Any:
    """The Python object an encoded argument stands for (used on meta tensors to infer)."""
    if isinstance(value, dict):
        tag, v = _tag(value)
        if tag == "in":
            return tensors[int(v)]
        if tag == "device_of":
            return tensors[int(v)].device
        if tag in ("dtype", "memory_format"):
            return _named(tag, v)
        if tag == "ellipsis":
            return Ellipsis
        if tag == "slice":
            return slice(*v)
        raise ops.InvalidGraph(f"unknown call argument tag {tag!r}")
    if isinstance(value, (list, tuple)):
        return tuple(build(v, tensors) for v in value)
    return value


# ---------------------------------------------------------------- the op spec's rules


def render_call(args: list[str], attrs: dict) -> str:
    target = attrs["target"]
    resolve(target)
    values = [source(v, args) for v in attrs.get("args", ())]
    keywords = [f"{k}={source(v, args)}" for k, v in attrs.get("kwargs", {}).items()]
    if target.startswith("operator."):
        pattern = OPERATORS[target.removeprefix("operator.")]
        if target in ("operator.getitem", "operator.setitem"):
            expr = pattern.format(values[0], source(attrs["args"][1], args, index=True),
                                  *values[2:])
            if target == "operator.setitem":
                return expr  # a statement, not a value (``ops.is_statement``)
        else:
            expr = "(" + pattern.format(*values) + ")"
    elif target.startswith("Tensor."):
        if not values:
            raise ops.InvalidGraph(f"{target} needs a tensor to call it on")
        expr = f"{values[0]}.{target.removeprefix('Tensor.')}({', '.join(values[1:] + keywords)})"
    else:
        expr = f"{target}({', '.join(values + keywords)})"
    pick = attrs.get("pick")
    return expr if pick is None else f"{expr}[{int(pick)}]"


def call(attrs: dict, tensors: list[torch.Tensor]) -> Any:
    """Run the node's op on concrete (or meta) tensors."""
    fn = resolve(attrs["target"])
    args = [build(v, tensors) for v in attrs.get("args", ())]
    kwargs = {k: build(v, tensors) for k, v in attrs.get("kwargs", {}).items()}
    out = fn(*args, **kwargs)
    pick = attrs.get("pick")
    return out if pick is None else out[int(pick)]


def check_attrs(attrs: dict) -> None:
    """A call node's attributes are plain data that render to one call and nothing else:
    an allowed target, identifier keyword names, arguments of plain values and known tags."""
    resolve(attrs.get("target"))
    args, kwargs = attrs.get("args", ()), attrs.get("kwargs", {})
    if not isinstance(args, (list, tuple)) or not isinstance(kwargs, dict):
        raise ops.InvalidGraph("call args must be a list and kwargs a dict")
    for name in kwargs:
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ops.InvalidGraph(f"call keyword {str(name)[:40]!r} is not a name")
    device = kwargs.get("device")
    if device is not None and not (isinstance(device, dict) and "device_of" in device):
        raise ops.InvalidGraph("a call's device must be an input's (device_of), not a name")
    for value in [*args, *kwargs.values()]:
        _check_value(value)
    pick = attrs.get("pick")
    if pick is not None and (type(pick) is not int or pick < 0):
        raise ops.InvalidGraph(f"call pick {str(pick)[:40]!r} is not an index")
    alias, mutates = attrs.get("alias"), attrs.get("mutates", ())
    if (alias is not None and (type(alias) is not int or alias < 0)) or \
            not isinstance(mutates, (list, tuple)) or \
            any(type(i) is not int or i < 0 for i in mutates):
        raise ops.InvalidGraph("a call's alias and mutates must be input positions")


def _check_value(value: object) -> None:
    if isinstance(value, dict):
        tag, v = _tag(value)
        if tag in ("in", "device_of") and (type(v) is not int or v < 0):
            raise ops.InvalidGraph(f"call argument {tag} {str(v)[:40]!r} is not an index")
        if tag in ("dtype", "memory_format"):
            _named(tag, v)
        elif tag == "slice" and (not isinstance(v, (list, tuple)) or len(v) != 3
                                 or any(x is not None and type(x) is not int for x in v)):
            raise ops.InvalidGraph(f"malformed slice {str(v)[:40]!r}")
        elif tag not in ("in", "device_of", "ellipsis", "slice", "dtype", "memory_format"):
            raise ops.InvalidGraph(f"unknown call argument tag {str(tag)[:40]!r}")
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_value(v)
    elif not (value is None or isinstance(value, (bool, int, float, str))):
        raise ops.InvalidGraph(f"call argument {str(value)[:40]!r} is not plain data")


def infer_call(shapes: list[ops.Shape], dtypes: list[str], attrs: dict) -> tuple[ops.Shape, str]:
    check_attrs(attrs)
    tensors = [torch.empty(s, dtype=ops.torch_dtype(d), device="meta")
               for s, d in zip(shapes, dtypes)]
    try:
        with ops.probe():  # a factory allocates nothing while its shape is inferred
            out = call(attrs, tensors)
        if out is None and attrs.get("target") == "operator.setitem":
            out = tensors[0]  # a statement: the node is its target, written
    except ops.InvalidGraph:
        raise
    except Exception as err:  # the op rejects these shapes/dtypes: an invalid graph
        raise ops.InvalidGraph(f"{attrs.get('target')}: {type(err).__name__}: "
                               f"{str(err).splitlines()[0] if str(err) else ''}") from None
    if not isinstance(out, torch.Tensor):
        raise ops.InvalidGraph(f"{attrs.get('target')} does not return one tensor")
    if out.numel() > MAX_NUMEL:
        raise ops.InvalidGraph(f"{attrs.get('target')} makes {out.numel()} elements, more than "
                               f"numfuzz runs ({MAX_NUMEL})")
    return tuple(out.shape), str(out.dtype).removeprefix("torch.")


def is_int_cast(attrs: dict) -> bool:
    """``x.to(torch.int8)`` and the like: a float-to-integer conversion (truncation)."""
    args = list(attrs.get("args", ()))
    if attrs.get("target") != "Tensor.to" or len(args) != 2 or attrs.get("kwargs"):
        return False
    tag = args[1] if isinstance(args[1], dict) else {}
    return tag.get("dtype") in ("int8", "uint8", "int16", "int32", "int64")


def casts_dtype(attrs: dict) -> bool:
    """Whether a call names a dtype (a cast the minimizer must not widen away)."""
    def walk(v: object) -> bool:
        if isinstance(v, dict):
            return "dtype" in v or any(walk(x) for x in v.values())
        if isinstance(v, (list, tuple)):
            return any(walk(x) for x in v)
        return False

    return walk(attrs.get("args", ())) or walk(attrs.get("kwargs", {}))


# A captured float-to-integer conversion (``x.to(torch.int8)``) is unclamped: undefined out of
# range. Which input a call shares storage with and which it writes is what capture saw it do
# (``alias``, ``mutates``: ``user.translate``); a call that does not say is taken to alias its
# first input, so that statement order never moves a read across a write through it.
ops.register("call", -1, "", category="generic", renderer=render_call, infer=infer_call,
             attrs=("target", "args", "kwargs", "pick", "alias", "mutates"), unclamped=True,
             alias=0)

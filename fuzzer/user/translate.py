"""Dynamo's FX graph of a user's model, translated node by node into numfuzz's graph IR.

Capture goes through Dynamo (the front end the user's divergence came through, so whatever
``torch.compile(fullgraph=True)`` accepts is accepted here): its FX graph is at the torch level
(``F.conv2d``, ``torch.erf``), with parameters and buffers lifted to graph inputs. Each FX node
becomes a generic ``call`` node (``fuzzer.ir.generic``), or the registry op that renders the very
same call (``user.lift``). Factories (``torch.arange(8, device=x.device)``) stay calls, so their
compiled kernels are tested too; random and uninitialized ones (``torch.rand``, ``torch.empty``)
are evaluated once and kept as constant inputs. Python values computed from shapes are
specialized, as ``dynamic=False`` does.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx

from fuzzer.errors import CaptureError
from fuzzer.execute.original import one_line
from fuzzer.ir import generic, ops
from fuzzer.ir.graph import Graph
from fuzzer.user.lift import recognize

# Factories whose values are random or uninitialized: captured as constants, never as calls.
NOT_PURE_FACTORIES = ("empty", "rand", "normal", "bernoulli", "multinomial", "poisson")
MULTI = object()  # marks an FX node whose value is a tuple of tensors (chunk, split)


def dynamo_graph(model: torch.nn.Module, inputs: list[torch.Tensor],
                  where: str) -> tuple[torch.fx.GraphModule, list]:
    grabbed: dict[str, Any] = {}

    def grab(gm: torch.fx.GraphModule, example: list) -> Callable[..., object]:
        grabbed["gm"], grabbed["example"] = gm, list(example)
        return gm.forward

    torch._dynamo.reset()
    try:
        torch.compile(model, backend=grab, fullgraph=True, dynamic=False)(*inputs)
    except Exception as err:
        raise CaptureError(f"{where}: torch.compile(fullgraph=True) cannot capture Model in one "
                           f"graph: {one_line(err)}") from None
    finally:
        torch._dynamo.reset()
    if "gm" not in grabbed:
        raise CaptureError(f"{where}: Model computes nothing torch.compile would compile")
    return grabbed["gm"], grabbed["example"]


class Translator:
    """Walks an FX graph once, in order, building the IR and the case's input tensors."""

    def __init__(self, gm: torch.fx.GraphModule, example: list, user_inputs: list[torch.Tensor],
                 param_names: dict[int, str], pristine: dict[int, torch.Tensor] | None = None,
                 outputs: int | None = None) -> None:
        self.gm = gm
        self.example = example
        self.user_inputs = user_inputs
        self.param_names = param_names
        # Tracing ran forward once, writing the example tensors a stateful model writes: each
        # one's value before that (by id), which the replay of a write must start from.
        self.pristine = pristine or {}
        self.outputs = outputs  # how many the model returns; Dynamo may add side effects
        self.graph = Graph()
        self.values: dict[str, torch.Tensor] = {}
        self.ir: dict[torch.fx.Node, int] = {}  # FX node -> IR node, for tensor values
        self.concrete: dict[torch.fx.Node, Any] = {}  # FX node -> its real value
        self.multi: dict[torch.fx.Node, tuple] = {}  # FX node -> the tensors it returned
        self.sources: dict[int, dict] = {}  # IR node -> where the user's code made it

    def run(self) -> None:
        """Translate every FX node; any failure is one InvalidGraph line naming the node's op."""
        placeholders = iter(self.example)
        for node in self.gm.graph.nodes:
            try:
                self._translate(node, placeholders)
            except ops.InvalidGraph:
                raise
            except Exception as err:  # a form of call the translator does not know
                shown = getattr(node.target, "__qualname__", node.target)
                raise ops.InvalidGraph(f"cannot translate {node.op} {shown!r}: "
                                       f"{one_line(err)}") from None

    def _translate(self, node: torch.fx.Node, placeholders: Iterator[object]) -> None:
        if node.op == "placeholder":
            self.placeholder(node, next(placeholders))
        elif node.op == "get_attr":
            value: object = self.gm
            for part in str(node.target).split("."):
                value = getattr(value, part)
            if not isinstance(value, torch.Tensor):  # a submodule (a higher-order op's body)
                raise TypeError(f"{type(value).__name__} {node.target} is not a tensor")
            self.constant(node, value, name=str(node.target))
        elif node.op in ("call_function", "call_method"):
            self.call(node)
        elif node.op == "output":
            self.output(node)
        else:
            raise ops.InvalidGraph(f"unsupported FX node {node.op} {node.target}")

    # -------------------------------------------------------- inputs

    def placeholder(self, node: torch.fx.Node, value: object) -> None:
        if not isinstance(value, torch.Tensor):
            self.concrete[node] = value
            return
        for i, t in enumerate(self.user_inputs):
            if value is t:
                self._input(node, value, role="x", arg=i)
                return
        self.constant(node, value, name=self.param_names.get(id(value), node.name))

    def constant(self, node: torch.fx.Node, value: torch.Tensor, name: str) -> None:
        """Weights, buffers and folded factories: inputs that keep their exact values."""
        self._input(node, value, role="w", name=name)

    def _input(self, node: torch.fx.Node, value: torch.Tensor, **attrs: Any) -> None:
        value = self.pristine.get(id(value), value).detach().cpu().clone()
        dtype = str(value.dtype).removeprefix("torch.")
        ops.torch_dtype(dtype)
        nid = self.graph.add("input", [], shape=tuple(value.shape), dtype=dtype, **attrs)
        self.values[str(nid)] = value
        self.ir[node] = nid
        self.concrete[node] = value.clone()  # replaying writes changes this copy, not the case

    # -------------------------------------------------------- calls

    def call(self, node: torch.fx.Node) -> None:
        source = node.args[0] if node.args else None
        if node.target is operator.getitem and isinstance(source, torch.fx.Node) \
                and self.concrete.get(source) is MULTI:
            self._pick(node)
            return
        before = {n: self.concrete[n].clone() for n in node.all_input_nodes if n in self.ir}
        value = self._replay(node)
        reads_tensor = any(n in self.ir for n in node.all_input_nodes)
        written = [n for n, old in before.items() if not _same_bits(self.concrete[n], old)]
        if written:  # an in-place op, ``x[i] = v``, an ``out=``: the program has state
            self._emit(node, self._target(node), self.concrete[written[0]]
                       if value is None else value, written=written)
        elif isinstance(value, torch.Tensor):
            if not reads_tensor and not self._factory(node, value):
                self.constant(node, value, name=node.name)  # random or uninitialized values
                return
            if reads_tensor:
                self._emit(node, self._target(node), value)
        elif isinstance(value, (tuple, list)) and value and all(
                isinstance(v, torch.Tensor) for v in value):
            self.concrete[node] = MULTI
            self.multi[node] = tuple(value)
        elif value is None and not node.users:
            return  # grad-mode switches and other side effects on no value: nothing to compute
        else:
            self.concrete[node] = value  # sizes, dtypes …: specialized like dynamic=False

    def _factory(self, node: torch.fx.Node, value: torch.Tensor) -> bool:
        """``torch.arange(n, device=x.device)`` stays a call: its compiled kernel is part of what
        is tested (a bug in it would vanish were it folded into a constant). Tied to the first
        input, which gives it its device. Random and uninitialized factories stay constants:
        their values are not a function of the program."""
        try:
            target = self._target(node)
        except ops.InvalidGraph:
            return False
        name = target.rsplit(".", 1)[-1]
        anchor = next((n for n, nid in self.ir.items()
                       if self.graph.node(nid).is_input), None)
        if name.startswith(NOT_PURE_FACTORIES) or anchor is None:
            return False
        try:
            self._emit(node, target, value, anchor=anchor)
        except ops.InvalidGraph:
            return False
        return True

    def _replay(self, node: torch.fx.Node) -> Any:
        """Run the node on real values (the user's own code, as their file already ran): an
        in-place op writes the values it reads, as it did in the model."""
        args = torch.fx.node.map_arg(node.args, lambda n: self.concrete[n])
        kwargs = dict(torch.fx.node.map_arg(node.kwargs, lambda n: self.concrete[n]))
        try:
            if node.op == "call_method":
                return getattr(args[0], str(node.target))(*args[1:], **kwargs)
            target = node.target
            assert callable(target)  # a call_function node's target is the function itself
            return target(*args, **kwargs)
        except Exception as err:
            raise ops.InvalidGraph(f"{node.target} failed when replayed: {one_line(err)}") \
                from None

    def _target(self, node: torch.fx.Node) -> str:
        if node.op == "call_method":
            target = generic.method_name(str(node.target))
        else:
            target = generic.target_name(node.target)
        if target is None:
            target = _dunder_operator(node.target)
        if target is None:
            shown = getattr(node.target, "__qualname__", node.target)
            raise ops.InvalidGraph(f"op {shown!r} is not a tensor op numfuzz can run")
        return target

    def _encode(self, value: object, tensor_inputs: list[int],
                sources: list[torch.fx.Node] | None = None) -> Any:
        """An FX argument as plain data; tensors become {"in": k} into ``tensor_inputs`` (and
        their FX nodes into ``sources``, position for position)."""
        if isinstance(value, torch.fx.Node):
            if value in self.ir:
                nid = self.graph.current(self.ir[value])  # after writes: the old alias again
                if nid not in tensor_inputs:
                    tensor_inputs.append(nid)
                    if sources is not None:
                        sources.append(value)
                return {"in": tensor_inputs.index(nid)}
            return self._encode(self.concrete[value], tensor_inputs, sources)
        if isinstance(value, (list, tuple)):
            return [self._encode(v, tensor_inputs, sources) for v in value]
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).removeprefix("torch.")}
        if isinstance(value, torch.memory_format):
            return {"memory_format": str(value).removeprefix("torch.")}
        if isinstance(value, torch.device):
            if not tensor_inputs:
                raise ops.InvalidGraph("a device argument with no tensor to take it from")
            return {"device_of": 0}
        if isinstance(value, slice):
            return {"slice": [self._encode(v, tensor_inputs) for v in
                              (value.start, value.stop, value.step)]}
        if value is Ellipsis:
            return {"ellipsis": True}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, torch.Size):
            return list(value)
        raise ops.InvalidGraph(f"argument {value!r} ({type(value).__name__}) cannot be recorded")

    def _emit(self, node: torch.fx.Node, target: str, value: torch.Tensor,
              pick: int | None = None, source: torch.fx.Node | None = None,
              anchor: torch.fx.Node | None = None,
              written: list[torch.fx.Node] | None = None) -> None:
        """One IR node for the call: a registry op where one renders it exactly and it writes
        nothing, else a generic call recording which tensor input its result shares storage
        with (``alias``) and which it wrote (``mutates``), as the replay saw."""
        call_node = source or node
        tensor_inputs: list[int] = [self.ir[anchor]] if anchor is not None else []
        sources: list[torch.fx.Node] = [anchor] if anchor is not None else []
        args = [self._encode(a, tensor_inputs, sources) for a in call_node.args]
        kwargs = {k: self._encode(v, tensor_inputs, sources)
                  for k, v in call_node.kwargs.items()}
        attrs: dict = {"target": target, "args": args, "kwargs": kwargs}  # a Node's attrs
        if pick is not None:
            attrs["pick"] = pick
        attrs["alias"] = next((k for k, n in enumerate(sources)
                               if _shares(self.concrete[n], value)), None)
        if written:
            attrs["mutates"] = [k for k, n in enumerate(sources) if n in written]
        op, inputs, attrs = (None if written else
                             recognize(target, tensor_inputs, attrs, self.graph)) or \
            ("call", tensor_inputs, attrs)
        nid = self.graph.add(op, inputs, **attrs)
        self.sources[nid] = provenance(call_node)
        got = self.graph.node(nid)
        if (got.shape, got.dtype) != (tuple(value.shape),
                                            str(value.dtype).removeprefix("torch.")):
            raise ops.InvalidGraph(f"{target}: inferred {got.shape} {got.dtype}, the model "
                                   f"computed {tuple(value.shape)} {value.dtype}")
        self.ir[node] = nid
        self.concrete[node] = value

    def _pick(self, node: torch.fx.Node) -> None:
        """``chunk(...)[i]``: one generic node per element used."""
        source, index = node.args
        assert isinstance(source, torch.fx.Node)  # call() checked it before picking from it
        if not isinstance(index, int):
            raise ops.InvalidGraph("a multi-output op is indexed by something other than an int")
        value = self.multi[source][index]
        self._emit(node, self._target(source), value, pick=index, source=source)

    def output(self, node: torch.fx.Node) -> None:
        outs = node.args[0]
        outs = outs if isinstance(outs, (tuple, list)) else [outs]
        # The model's own outputs come first; what follows are values Dynamo stores back after
        # the graph (``self.steps += 1`` rebinds the attribute to the in-place result). A write
        # in place is already in the graph, judged as the state it leaves; a rebinding to a new
        # tensor is not judged.
        outs = outs[:self.outputs] if self.outputs is not None else outs
        ids = []
        for out in outs:
            if not isinstance(out, torch.fx.Node) or out not in self.ir:
                raise ops.InvalidGraph("Model returns something other than tensors")
            ids.append(self.graph.current(self.ir[out]))
        if not ids:
            raise ops.InvalidGraph("Model returns no tensors")
        self.graph.outputs = ids


# A frame of a stack trace as Dynamo records it on a node: the file, line and function, then
# the line of source itself.
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n[ \t]*([^\n]*)')


def provenance(node: torch.fx.Node) -> dict:
    """Where the user's code made this node: the innermost frame Dynamo recorded (``file``,
    ``line``, ``code``: the source line) and the submodule it ran in (``module``, as
    ``model.get_submodule`` takes it: ``encoder.layers.3.attn``; '' for the model itself)."""
    frames = _FRAME.findall(str(node.meta.get("stack_trace") or ""))
    file, line, _, code = frames[-1] if frames else ("", "0", "", "")
    stack = node.meta.get("nn_module_stack") or {}
    path = str(list(stack.values())[-1][0]) if stack else ""
    path = re.sub(r"\[['\"]?([^\]'\"]+)['\"]?\]", r".\1", re.sub(r"^L\['self'\]", "", path))
    return {"file": file, "line": int(line), "code": code.strip(), "module": path.strip(".")}


def _dunder_operator(target: object) -> str | None:
    """``Tensor.__eq__`` and friends, which some torch versions record instead of
    ``operator.eq``: the same Python operator, so the same rendered source."""
    name = str(getattr(target, "__name__", target))
    if not (name.startswith("__") and name.endswith("__")):
        return None
    bare = name.strip("_")
    for candidate in (bare, bare + "_"):
        if candidate in generic.OPERATORS:
            return f"operator.{candidate}"
    return None


def _shares(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Do two tensors share storage (a view of an input, an in-place op's result)?"""
    return bool(a.numel() and b.numel()) and \
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _same_bits(a: object, b: torch.Tensor) -> bool:
    """Has a replayed call left this tensor as it was (NaN equal to NaN)?"""
    if not isinstance(a, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return bool((a == b).all())

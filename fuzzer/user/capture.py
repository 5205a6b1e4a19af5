"""A user's model file -> numfuzz's graph IR, weights included, checked to be the same program.

The file follows the KernelBench convention: ``class Model(nn.Module)``, ``get_inputs()`` and an
optional ``get_init_inputs()``. ``torch.manual_seed(seed)`` runs before the model is built and the
inputs are drawn, so a file and a seed always give the same case.

Capture goes through Dynamo (the front end the user's divergence came through, so whatever
``torch.compile(fullgraph=True)`` accepts is accepted here): its FX graph is at the torch level
(``F.conv2d``, ``torch.erf``), with parameters and buffers lifted to graph inputs. Each FX node
becomes a registry op where one renders to the very same call, else a generic ``call`` node
(``fuzzer.ir.generic``). Factories (``torch.arange(8, device=x.device)``) stay calls, so their
compiled kernels are tested too; random and uninitialized ones (``torch.rand``, ``torch.empty``)
are evaluated once and kept as constant inputs. Python values computed from shapes are
specialized, as ``dynamic=False`` does.
The captured program must give the model's eager outputs bit for bit, or capture refuses.
"""

from __future__ import annotations

import copy
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.fx

from fuzzer.corpus.case import Case, CaseError
from fuzzer.corpus.replay import replay_case, task_for
from fuzzer.errors import CaptureError
from fuzzer.execute.original import load_model_file, one_line, tensor_leaves
from fuzzer.ir import generic, ops, render
from fuzzer.ir.graph import Graph
from fuzzer.judge import oracle
from fuzzer.judge.key import same_divergence
from fuzzer.judge.oracle import Verdict

# Factories whose values are random or uninitialized: captured as constants, never as calls.
NOT_PURE_FACTORIES = ("empty", "rand", "normal", "bernoulli", "multinomial", "poisson")
MULTI = object()  # marks an FX node whose value is a tuple of tensors (chunk, split)


def load_target(path: Path, seed: int = 0) -> Case:
    """A case file, or a KernelBench-style model file captured into a case."""
    if path.suffix == ".py":
        return capture_file(path, seed).case()
    if not path.exists():
        raise CaseError(f"{path}: no such file")
    return Case.load(path)


# ------------------------------------------------------------------ Dynamo -> IR


@dataclass
class Captured:
    """A model file as a graph, its inputs (weights included) and where it came from."""

    graph: Graph
    inputs: dict[str, torch.Tensor]
    dtype: str
    origin: dict = field(default_factory=dict)

    @property
    def generic_ops(self) -> int:
        return generic_ops(self.graph)

    def case(self, device: str = "auto") -> Case:
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        return Case(graph=self.graph.copy(), inputs=dict(self.inputs), device=device,
                    dtype=self.dtype, seed=int(self.origin.get("seed", 0)), grammar="user-model",
                    origin=dict(self.origin))


def generic_ops(graph: Graph) -> int:
    """How many nodes were kept as generic calls (outside the registry)."""
    return sum(graph.node(n)["op"] == "call" for n in graph.op_ids())


def capture_file(path: str | Path, seed: int = 0) -> Captured:
    loaded = load_model_file(path, seed)
    captured = capture_module(loaded.model, loaded.inputs, str(path))
    captured.origin.update({"model_file": str(path), "seed": seed})
    return captured


def capture_module(model: torch.nn.Module, inputs: list[torch.Tensor],
                   where: str = "model") -> Captured:
    """Trace ``model`` on ``inputs`` with Dynamo and translate its graph; verify it bit for bit."""
    # Tracing runs forward once, which may update buffers (BatchNorm in training mode) or the
    # inputs in place: trace a copy on clones, and record the untouched values.
    try:
        traced, clones = copy.deepcopy(model), [t.clone() for t in inputs]
    except Exception as err:
        raise CaptureError(f"{where}: Model cannot be copied: {one_line(err)}") from None
    gm, example = _dynamo_graph(traced, clones, where)
    names = {id(t): n for n, t in [*traced.named_parameters(), *traced.named_buffers()]}
    translator = Translator(gm, example, clones, names)
    try:
        translator.run()
    except ops.InvalidGraph as err:
        raise CaptureError(f"{where}: cannot represent the model: {err}") from None
    pristine = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    for node_id in translator.graph.input_ids():
        attrs = translator.graph.node(node_id)["attrs"]
        if attrs.get("role") == "x":
            translator.values[str(node_id)] = inputs[attrs["arg"]].detach().clone()
        elif attrs.get("name") in pristine:
            translator.values[str(node_id)] = pristine[attrs["name"]].detach().cpu().clone()
    graph = translator.graph
    graph.remove_dead()
    fuse_heads(graph)
    values = {str(n): translator.values[str(n)] for n in graph.input_ids()}
    captured = Captured(graph, values, _main_dtype(graph))
    _check_faithful(model, inputs, captured, where)
    return captured


def _dynamo_graph(model: torch.nn.Module, inputs: list[torch.Tensor],
                  where: str) -> tuple[torch.fx.GraphModule, list]:
    grabbed: dict[str, Any] = {}

    def grab(gm: torch.fx.GraphModule, example: list) -> Any:
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
                 param_names: dict[int, str]) -> None:
        self.gm = gm
        self.example = example
        self.user_inputs = user_inputs
        self.param_names = param_names
        self.graph = Graph()
        self.values: dict[str, torch.Tensor] = {}
        self.ir: dict[torch.fx.Node, int] = {}  # FX node -> IR node, for tensor values
        self.concrete: dict[torch.fx.Node, Any] = {}  # FX node -> its real value
        self.multi: dict[torch.fx.Node, tuple] = {}  # FX node -> the tensors it returned

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

    def _translate(self, node: torch.fx.Node, placeholders: Any) -> None:
        if node.op == "placeholder":
            self.placeholder(node, next(placeholders))
        elif node.op == "get_attr":
            value = self.gm
            for part in str(node.target).split("."):
                value = getattr(value, part)
            self.constant(node, value, name=str(node.target))
        elif node.op in ("call_function", "call_method"):
            self.call(node)
        elif node.op == "output":
            self.output(node)
        else:
            raise ops.InvalidGraph(f"unsupported FX node {node.op} {node.target}")

    # -------------------------------------------------------- inputs

    def placeholder(self, node: torch.fx.Node, value: Any) -> None:
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
        value = value.detach().cpu().clone()
        dtype = str(value.dtype).removeprefix("torch.")
        ops.torch_dtype(dtype)
        nid = self.graph.add("input", [], shape=tuple(value.shape), dtype=dtype, **attrs)
        self.values[str(nid)] = value
        self.ir[node] = nid
        self.concrete[node] = value

    # -------------------------------------------------------- calls

    def call(self, node: torch.fx.Node) -> None:
        source = node.args[0] if node.args else None
        if node.target is operator.getitem and isinstance(source, torch.fx.Node) \
                and self.concrete.get(source) is MULTI:
            self._pick(node)
            return
        value = self._replay(node)
        reads_tensor = any(n in self.ir for n in node.all_input_nodes)
        if isinstance(value, torch.Tensor):
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
                       if self.graph.node(nid)["op"] == "input"), None)
        if name.startswith(NOT_PURE_FACTORIES) or anchor is None:
            return False
        try:
            self._emit(node, target, value, anchor=anchor)
        except ops.InvalidGraph:
            return False
        return True

    def _replay(self, node: torch.fx.Node) -> Any:
        """Run the node on real values (the user's own code, as their file already ran)."""
        args = torch.fx.node.map_arg(node.args, lambda n: self.concrete[n])
        kwargs = dict(torch.fx.node.map_arg(node.kwargs, lambda n: self.concrete[n]))
        if kwargs.get("inplace") is True:
            kwargs["inplace"] = False
        try:
            if node.op == "call_method":
                return getattr(args[0], _out_of_place(str(node.target)))(*args[1:], **kwargs)
            return node.target(*args, **kwargs)
        except Exception as err:
            raise ops.InvalidGraph(f"{node.target} failed when replayed: {one_line(err)}") \
                from None

    def _target(self, node: torch.fx.Node) -> str:
        if node.op == "call_method":
            target = generic.method_name(_out_of_place(str(node.target)))
        else:
            target = generic.target_name(node.target)
        if target is None:
            target = _dunder_operator(node.target)
        if target is None:
            shown = getattr(node.target, "__qualname__", node.target)
            raise ops.InvalidGraph(f"op {shown!r} is not a tensor op numfuzz can run")
        return target

    def _encode(self, value: Any, tensor_inputs: list[int]) -> Any:
        """An FX argument as plain data; tensors become {"in": k} into ``tensor_inputs``."""
        if isinstance(value, torch.fx.Node):
            if value in self.ir:
                nid = self.ir[value]
                if nid not in tensor_inputs:
                    tensor_inputs.append(nid)
                return {"in": tensor_inputs.index(nid)}
            return self._encode(self.concrete[value], tensor_inputs)
        if isinstance(value, (list, tuple)):
            return [self._encode(v, tensor_inputs) for v in value]
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
              anchor: torch.fx.Node | None = None) -> None:
        call_node = source or node
        tensor_inputs: list[int] = [self.ir[anchor]] if anchor is not None else []
        args = [self._encode(a, tensor_inputs) for a in call_node.args]
        kwargs = {k: self._encode(v, tensor_inputs) for k, v in call_node.kwargs.items()}
        if kwargs.get("inplace") is True:
            kwargs["inplace"] = False
        attrs = {"target": target, "args": args, "kwargs": kwargs}
        if pick is not None:
            attrs["pick"] = pick
        op, inputs, attrs = recognize(target, tensor_inputs, attrs, self.graph) or \
            ("call", tensor_inputs, attrs)
        nid = self.graph.add(op, inputs, **attrs)
        got = self.graph.node(nid)
        if (got["shape"], got["dtype"]) != (tuple(value.shape),
                                            str(value.dtype).removeprefix("torch.")):
            raise ops.InvalidGraph(f"{target}: inferred {got['shape']} {got['dtype']}, the model "
                                   f"computed {tuple(value.shape)} {value.dtype}")
        self.ir[node] = nid
        self.concrete[node] = value

    def _pick(self, node: torch.fx.Node) -> None:
        """``chunk(...)[i]``: one generic node per element used."""
        source, index = node.args
        if not isinstance(index, int):
            raise ops.InvalidGraph("a multi-output op is indexed by something other than an int")
        value = self.multi[source][index]
        self._emit(node, self._target(source), value, pick=index, source=source)

    def output(self, node: torch.fx.Node) -> None:
        outs = node.args[0]
        outs = outs if isinstance(outs, (tuple, list)) else [outs]
        ids = []
        for out in outs:
            if not isinstance(out, torch.fx.Node) or out not in self.ir:
                raise ops.InvalidGraph("Model returns something other than tensors")
            ids.append(self.ir[out])
        if not ids:
            raise ops.InvalidGraph("Model returns no tensors")
        self.graph.outputs = ids


def _dunder_operator(target: Any) -> str | None:
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


def _out_of_place(method: str) -> str:
    """``add_`` -> ``add``: the IR is pure dataflow, so in-place updates become new values."""
    if method.endswith("_") and not method.endswith("__") and hasattr(torch.Tensor, method[:-1]):
        return method[:-1]
    return method


# ------------------------------------------------------------------ registry ops where exact

UNARY = {"erf", "exp", "tanh", "sigmoid", "relu", "abs", "neg", "log2", "sqrt", "rsqrt",
         "floor", "ceil", "round", "trunc", "sign"}
SCALAR_OPS = {"operator.mul": "mul_scalar", "operator.add": "add_scalar",
              "operator.truediv": "div_scalar"}
BINARY_OPS = {"operator.add": "add", "operator.sub": "sub", "operator.mul": "mul",
              "operator.truediv": "div", "torch.maximum": "maximum", "torch.minimum": "minimum",
              "operator.gt": "gt", "torch.matmul": "matmul", "operator.matmul": "matmul"}


def recognize(target: str, inputs: list[int], attrs: dict,
              graph: Graph) -> tuple[str, list[int], dict] | None:
    """The registry op that renders to the same computation, if there is one.

    Registry ops are what mutation, the slicing pass and the heads' boundary distances know;
    anything that would change a single bit stays generic (the capture check enforces it).
    """
    args, kwargs = attrs["args"], attrs["kwargs"]
    short = target.split(".", 1)[1] if "." in target else target
    tensor = {"in": 0}
    floats = [graph.node(i)["dtype"] in ops.FLOAT_DTYPES for i in inputs]
    if "pick" in attrs or not inputs or not all(floats):
        return None
    if short in UNARY and args == [tensor] and not kwargs:
        return short, inputs, {}
    if target == "F.gelu" and args == [tensor] and set(kwargs) <= {"approximate"}:
        return "gelu", inputs, {"approximate": kwargs.get("approximate", "none")}
    if target in ("F.silu", "F.relu") and args == [tensor] and not kwargs.get("inplace"):
        return short, inputs, {}
    if len(args) == 2 and target in SCALAR_OPS:
        a, b = args
        if a == tensor and _number(b):
            return SCALAR_OPS[target], inputs, {"value": b}
        if b == tensor and _number(a) and target != "operator.truediv":  # a * x == x * a exactly
            return SCALAR_OPS[target], inputs, {"value": a}
    if target in ("operator.gt",) and len(args) == 2 and args[0] == tensor and _number(args[1]):
        return "gt_scalar", inputs, {"value": float(args[1])}
    if target in BINARY_OPS and args == [{"in": 0}, {"in": 1}] and not kwargs:
        same = len({graph.node(i)["dtype"] for i in inputs}) == 1
        return (BINARY_OPS[target], inputs, {}) if same else None
    if target == "torch.clamp" and len(args) == 3 and args[0] == tensor and not kwargs \
            and _number(args[1]) and _number(args[2]):
        return "clamp", inputs, {"lo": args[1], "hi": args[2]}
    if target == "Tensor.transpose" and len(args) == 3 and args[0] == tensor and not kwargs:
        return "transpose", inputs, {"dim0": args[1], "dim1": args[2]}
    if target == "F.linear" and args == [{"in": 0}, {"in": 1}, {"in": 2}] and not kwargs:
        return "linear", inputs, {}
    if target in ("torch.softmax", "F.softmax", "Tensor.softmax"):
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if args[:1] == [tensor] and isinstance(dim, int) and kwargs.get("dtype") is None \
                and len(args) <= 2:
            return "softmax", inputs, {"dim": dim}
    if target == "F.conv2d":
        return _conv2d(args, kwargs, inputs)
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _conv2d(args: list, kwargs: dict, inputs: list[int]) -> tuple[str, list[int], dict] | None:
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    given = dict(zip(names, args)) | kwargs
    if [given.get(n) for n in names[:3]] != [{"in": 0}, {"in": 1}, {"in": 2}]:
        return None

    def square(v: Any, default: int) -> int | None:
        v = default if v is None else v
        v = list(v) if isinstance(v, (list, tuple)) else [v, v]
        return v[0] if len(v) == 2 and v[0] == v[1] and isinstance(v[0], int) else None

    stride, padding = square(given.get("stride"), 1), square(given.get("padding"), 0)
    dilation, groups = square(given.get("dilation"), 1), given.get("groups", 1)
    if None in (stride, padding) or dilation != 1 or not isinstance(groups, int):
        return None
    return "conv2d", inputs, {"stride": stride, "padding": padding, "groups": groups}


def fuse_heads(graph: Graph) -> None:
    """Written-out encodings become registry heads, which know their discontinuity.

    ``(clamp(ceil(log2(|x| + eps)), -127, 127) + 127).to(uint8)`` is the E8M0 head and
    ``sign(x).to(int8)`` the sign head: with them the oracle can say how far float64 sat from
    the boundary. Only exact matches fuse; every intermediate must feed nothing else.
    """
    for out in list(graph.outputs):
        chain = _chain_back(graph, out, 7)
        ops_ = [ops.label(graph.node(n)["op"], graph.node(n)["attrs"]) for n in chain]
        if ops_[-2:] == ["sign", "Tensor.to"] and _casts_to(graph, chain[-1], "int8"):
            _fuse(graph, chain[-2:], "sign_int8", {})
        elif ops_ == ["abs", "add_scalar", "log2", "ceil", "clamp", "add_scalar", "Tensor.to"] \
                and _casts_to(graph, chain[-1], "uint8") and _e8m0_constants(graph, chain):
            eps = graph.node(chain[1])["attrs"]["value"]
            _fuse(graph, chain, "e8m0", {"eps": float(eps)})


def _chain_back(graph: Graph, node: int, length: int) -> list[int]:
    chain = [node]
    while len(chain) < length:
        inputs = graph.node(chain[0])["inputs"]
        if len(inputs) != 1 or graph.node(inputs[0])["op"] == "input":
            break
        chain.insert(0, inputs[0])
    return chain


def _casts_to(graph: Graph, node: int, dtype: str) -> bool:
    attrs = graph.node(node)["attrs"]
    return list(attrs.get("args", ())) == [{"in": 0}, {"dtype": dtype}] and not attrs.get("kwargs")


def _e8m0_constants(graph: Graph, chain: list[int]) -> bool:
    clamp, bias = graph.node(chain[4])["attrs"], graph.node(chain[5])["attrs"]
    return (clamp["lo"], clamp["hi"], bias["value"]) == (-127, 127, 127) and \
        isinstance(graph.node(chain[1])["attrs"]["value"], float)


def _fuse(graph: Graph, chain: list[int], op: str, attrs: dict) -> None:
    if any(len(graph.consumers(n)) != 1 or n in graph.outputs for n in chain[:-1]):
        return
    source = graph.node(chain[0])["inputs"][0]
    head = graph.add(op, [source], **attrs)
    graph.replace_uses(chain[-1], head)
    graph.remove_dead()


def _main_dtype(graph: Graph) -> str:
    """The case's dtype: the first floating activation's, else the first floating weight's."""
    ids = graph.input_ids()
    ranked = sorted(ids, key=lambda n: graph.node(n)["attrs"].get("role") != "x")
    for n in ranked:
        if graph.node(n)["dtype"] in ops.FLOAT_DTYPES:
            return graph.node(n)["dtype"]
    return "float32"


# ------------------------------------------------------------------ faithfulness


def _check_faithful(model: torch.nn.Module, inputs: list[torch.Tensor], captured: Captured,
                    where: str) -> None:
    """The captured program's eager outputs must be the model's, bit for bit."""
    try:
        expected = tensor_leaves(copy.deepcopy(model)(*[t.clone() for t in inputs]))
    except Exception as err:
        raise CaptureError(f"{where}: Model fails on its own inputs: {one_line(err)}") from None
    program = render.load(render.render_model(captured.graph), "model")
    args = [captured.inputs[str(n)].clone() for n in captured.graph.input_ids()]
    try:
        got = list(program(*args))
    except Exception as err:
        raise CaptureError(f"{where}: the captured program fails to run: {one_line(err)}") \
            from None
    if len(got) != len(expected) or not oracle.bitwise_equal(expected, got):
        raise CaptureError(f"{where}: the captured program does not reproduce Model's eager "
                           "outputs bit for bit (randomness in forward, or state it mutates)")


# ------------------------------------------------------------------ same divergence?


@dataclass
class CaptureCheck:
    reproduces: bool
    message: str
    case: Case
    original: Verdict | None = None
    outputs: dict = field(default_factory=dict)  # the capture's eager/compiled/float64 outputs


def verify_capture(case: Case, runner: Any) -> CaptureCheck:
    """Run a captured case and the file's own model side by side: same divergence, same output?

    ``case`` comes from ``Captured.case`` (its origin names the file and seed); the original is
    judged with the case's backend and device.
    """
    path, seed = case.origin["model_file"], case.origin["seed"]
    task = task_for(case, keep_outputs=True)
    task.model_file, task.seed = str(Path(path).resolve()), seed
    original = Verdict.from_dict(runner.run(task)["verdict"])
    verdict, outputs = replay_case(case, runner=runner)
    case.verdict = verdict
    size = f"{len(case.graph)} ops, {generic_ops(case.graph)} generic"
    if not original.is_finding:
        return CaptureCheck(False, f"{path}: Model does not diverge with --seed {seed} on "
                            f"{case.device} ({original.summary()}); nothing to minimize",
                            case, original, outputs)
    if not same_divergence(original, verdict):
        return CaptureCheck(False, f"{path}: Model shows {original.summary()}, but its captured "
                            f"graph ({size}) shows {verdict.summary()}: not the same divergence",
                            case, original, outputs)
    return CaptureCheck(True, f"{path}: captured ({size}); the same divergence as Model itself: "
                        f"{verdict.kind} in output {verdict.output}", case, original, outputs)

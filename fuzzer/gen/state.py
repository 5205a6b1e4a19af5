"""Programs with state: views that alias their base, writes through them, reads through old
aliases, ``out=`` targets, buffers a forward updates, and what the program returns aliasing its
inputs.

A program holds a few storages (graph inputs it may write, values it computes) and takes two to
six steps, each one of:

- ``write``: a view chain (slices with steps, ``select``, ``narrow``, transposes, ``diagonal``,
  ``unsqueeze``, ``as_strided`` with an offset, ``view``, the bits as integers) onto a
  storage, then an in-place write through it (integer arithmetic through integer bits): an
  elementwise ``_`` op, ``fill_``/``zero_``/``clamp_``/``copy_``/
  ``masked_fill_``, slice assignment (also of a clone of the same storage, overlapping),
  ``index_put_`` (repeated indices, accumulated), ``index_add_``/``index_copy_``/
  ``index_fill_``, ``scatter_``/``scatter_add_``/``scatter_reduce_``, or an ``out=`` form;
- ``read``: an alias made earlier, read again after writes to its storage (``Builder.current``),
  through a pure op whose value may become an output;
- ``buffer``: running statistics a training-mode ``batch_norm`` updates, or a counter
  (``count.add_(1)``) and an exponential average (``avg.mul_(m).add_(...)``).

An input may come with a view of it that the caller passes beside it (``pass_view``: a window
``x[1:, 2:]`` or another view), so that the compiled function receives arguments sharing
storage; such a program then ends with a write through one and a read through the other
(``across``).

What it returns: some of what it read, a current view of a written storage (so which outputs
alias which inputs is judged too), and sometimes an encoding head on a float read. Every written
graph input is judged by its value after the call (``judge.semantics.judged``).
"""

from __future__ import annotations

import math

from fuzzer.gen import sizes
from fuzzer.gen.domains import LAYOUTS
from fuzzer.gen.grammar import Builder, add_head, as_module
from fuzzer.ir import ops

WRITABLE_LAYOUTS = tuple(layout for layout in LAYOUTS if layout != "expanded")
SAME_WIDTH_INT = {"float32": "int32", "float16": "int16", "bfloat16": "int16"}
UNARY_INPLACE = ("relu_", "abs_", "neg_", "floor_", "round_", "sign_", "exp_", "sigmoid_",
                 "tanh_", "reciprocal_", "square_", "sin_", "erf_")
BINARY_INPLACE = ("add_", "sub_", "mul_", "div_", "copysign_", "atan2_", "pow_")


class StateBuilder:
    """Grows one stateful program: the storages it may write, what it read on the way."""

    def __init__(self, b: Builder) -> None:
        self.b = b
        self.storages: list[int] = []  # roots a step may view and write
        self.reads: list[int] = []  # pure values computed from state: output candidates
        self.views: list[int] = []  # aliases made so far, read again later
        self.passed: list[tuple[int, int]] = []  # (input, the view of it passed beside it)

    # -------------------------------------------------------- storages

    def input(self) -> int:
        # Vector widths and their tails, kept small: a program with state compiles more kernels.
        shape = sizes.shape(self.b.rng, rank=self.b.rng.randint(1, 4), limit=512, empty=0.0)
        layout = self.b.pick(list(WRITABLE_LAYOUTS)) if self.b.chance(0.5) else "contiguous"
        node = self.b.input(shape, layout=layout)
        self.storages.append(node)
        if self.b.chance(0.4):
            self.pass_view(node)
        return node

    def pass_view(self, base: int) -> None:
        """A view of a graph input that the caller passes beside it (``Graph.passed_views``):
        the compiled function receives two arguments sharing storage, and a write through one
        must show through the other. Dynamo and AOTAutograd decide from sizes, strides and
        offsets whether such arguments overlap; a window (``x[1:, 2:]``) puts both the rows
        and the columns at an offset."""
        shape = self.b.shape(base)
        if not shape or 0 in shape:
            return
        view = self.window(base) if self.b.chance(0.6) else self.view_step(base, True)
        # One dtype: a dtype view passed beside its base (AOTAutograd's first input-mutation
        # support asserted against merging two dtypes into one base) is left for later.
        if view is not None and self.b.graph.node(view).dtype == self.b.graph.node(base).dtype:
            self.b.graph.node(view).attrs["passed"] = True
            self.views.append(view)
            self.storages.append(view)  # later writes may go through it, or views of it
            self.passed.append((base, view))

    def across(self) -> None:
        """A write through one of two aliased arguments, then a read through the other: what
        the compiler must order and propagate across them."""
        pair = list(self.b.pick(self.passed))
        self.b.rng.shuffle(pair)
        written, read = pair
        target = self.b.current(written)
        self.write_through(target) or self.b.attempt(self.b.pick(UNARY_INPLACE), target)
        shape = self.b.shape(read)
        if self.b.graph.node(read).dtype not in ops.FLOAT_DTYPES:
            return
        if shape and self.b.chance(0.5):
            node = self.b.attempt("sum", self.b.current(read),
                                  dim=self.b.rng.randrange(len(shape)))
        else:
            node = self.b.attempt("mul_scalar", self.b.current(read), value=2.0)
        if node is not None:
            self.reads.append(node)

    def window(self, base: int) -> int | None:
        """``x[a:b, c:d]``: a slice in every dim, each at an offset or whole."""
        index = []
        for size in self.b.shape(base):
            start = self.b.rng.randrange(size) if self.b.chance(0.6) else 0
            stop = self.b.rng.randint(start + 1, size) if self.b.chance(0.4) else None
            index.append((start or None, stop, 2 if self.b.chance(0.15) else None))
        return self.b.attempt("slice", base, index=tuple(index))

    def computed(self) -> int:
        """A value of its own contiguous storage computed from a storage: writes may hit
        intermediates, and ``view``, ``as_strided`` and ``out=`` need real contiguity (an
        elementwise op keeps its input's strides, so the value is made contiguous)."""
        floats = [n for n in self.storages if self.b.graph.node(n).dtype in ops.FLOAT_DTYPES]
        source = self.b.current(self.b.pick(floats))
        name = self.b.pick(["mul_scalar", "exp", "add_scalar", "sigmoid"])
        value = self.b.op(name, source, **({"value": self.b.pick([0.5, 3.0, -1.0])}
                                           if name in ("mul_scalar", "add_scalar") else {}))
        node = self.b.op("contiguous_clone", value)
        self.storages.append(node)
        return node

    # -------------------------------------------------------- views

    def view_of(self, base: int, writable: bool) -> int:
        """One or two views onto ``base`` (current). A view a write goes through never overlaps
        itself (no ``expand``, ``unfold``, overlapping ``as_strided``): eager refuses those."""
        node = self.b.current(base)
        for _ in range(self.b.rng.randint(1, 2)):
            node = self.view_step(node, writable) or node
        self.views.append(node)
        return node

    def view_step(self, node: int, writable: bool) -> int | None:
        b = self.b
        shape = b.shape(node)
        if not shape or 0 in shape:
            return None
        dim = b.rng.randrange(len(shape))
        size = shape[dim]
        kind = b.pick(["slice", "slice", "select", "narrow", "transpose", "diagonal",
                       "unsqueeze", "as_strided", "view", "dtype",
                       *([] if writable else ["unfold", "expand"])])
        if kind == "slice":
            start = b.rng.randrange(size)
            index = [None] * dim + [[start, None, b.pick([1, 1, 2, 3])]]
            return b.attempt("slice", node, index=tuple(tuple(p) if isinstance(p, list) else p
                                                        for p in index))
        if kind == "select" and len(shape) > 1:
            return b.attempt("select", node, dim=dim, index=b.rng.randrange(size))
        if kind == "narrow" and size > 1:
            start = b.rng.randrange(size - 1)
            return b.attempt("narrow", node, dim=dim, start=start,
                             length=b.rng.randint(1, size - start))
        if kind == "transpose" and len(shape) > 1:
            return b.attempt("transpose", node, dim0=0, dim1=-1)
        if kind == "diagonal" and len(shape) > 1:
            return b.attempt("diagonal", node, offset=b.pick([0, 1]), dim1=0, dim2=1)
        if kind == "unsqueeze":
            return b.attempt("unsqueeze", node, dim=b.rng.randint(0, len(shape)))
        # Functionalization refuses, by design, a write through a view chain holding an
        # ``as_strided``, and an argument aliasing another is itself one (a synthetic base).
        if kind == "as_strided" and self._dense(node) and not (writable and self._aliased(node)):
            return self._as_strided(node, writable)
        if kind == "view" and self._dense(node) and math.prod(shape) % 2 == 0:
            return b.attempt("view", node, size=(2, math.prod(shape) // 2))
        if kind == "dtype" and b.graph.node(node).dtype in SAME_WIDTH_INT and b.chance(0.35):
            # The same bits as integers (judged against eager: float64 has other bits).
            return b.attempt("view_dtype", node, to=SAME_WIDTH_INT[b.graph.node(node).dtype])
        if kind == "unfold":
            return b.attempt("unfold", node, dim=dim, size=min(size, 2), step=1)
        if kind == "expand" and 1 in shape:
            return b.attempt("expand", node, size=tuple(3 if s == 1 else s for s in shape))
        return None

    def _aliased(self, node: int) -> bool:
        """Is ``node``'s storage that of an argument with a view passed beside it?"""
        root = self.b.graph.root(node)
        return any(self.b.graph.root(base) == root for base, _ in self.passed)

    def _dense(self, node: int) -> bool:
        """A fresh contiguous storage viewed as itself: ``view`` and ``as_strided`` need its
        real strides, which only a contiguous graph input or computed value has for sure."""
        data = self.b.graph.node(node)
        return data.op == "contiguous_clone" or \
            (data.is_input and data.attrs.get("layout", "contiguous") == "contiguous")

    def _as_strided(self, node: int, writable: bool) -> int | None:
        """A window of the storage with its own strides and an offset, within the storage."""
        numel = math.prod(self.b.shape(node))
        rows, step = self.b.rng.randint(1, 3), self.b.pick([1, 2])
        cols = self.b.rng.randint(1, 4)
        row_stride = cols * step if writable else self.b.pick([1, cols * step])
        offset = self.b.rng.randrange(max(1, numel // 4))
        if offset + (rows - 1) * row_stride + (cols - 1) * step >= numel:
            return None
        return self.b.attempt("as_strided", node, size=(rows, cols), stride=(row_stride, step),
                              offset=offset)

    # -------------------------------------------------------- steps

    def write(self) -> None:
        base = self.b.pick(self.storages)
        target = self.view_of(base, writable=True)
        self.write_through(target) or self.b.attempt(self.b.pick(UNARY_INPLACE), target)

    def write_through(self, target: int) -> int | None:
        b = self.b
        shape, dtype = b.shape(target), b.graph.node(target).dtype
        if dtype not in ops.FLOAT_DTYPES:
            return self.integer_write(target)
        roll = b.rng.random()
        if roll < 0.2:
            return b.attempt(b.pick(UNARY_INPLACE), target)
        if roll < 0.4:
            return b.attempt(b.pick(BINARY_INPLACE), target, self.operand(shape, dtype))
        if roll < 0.55:
            return self.assign(target)
        if roll < 0.65:
            name = b.pick(["fill_", "zero_", "clamp_", "masked_fill_"])
            if name == "fill_":
                return b.attempt(name, target, value=b.pick([0.0, -0.0, 1.5, math.inf]))
            if name == "clamp_":
                return b.attempt(name, target, lo=-0.5, hi=b.pick([0.5, 2.0]))
            if name == "masked_fill_":
                mask = b.input(shape, role="mask", dtype="bool")
                return b.attempt(name, target, mask, value=b.pick([0.0, -1.0, math.nan]))
            return b.attempt(name, target)
        if roll < 0.9 and shape:
            return self.indexed(target)
        return self.out_form()

    def integer_write(self, target: int) -> int | None:
        """A write through an integer view of float bits (``x.view(torch.int32)``): integer
        arithmetic on the bits, a constant, or an indexed write."""
        b = self.b
        roll = b.rng.random()
        if roll < 0.4:
            return b.attempt(b.pick(["add_scalar_", "mul_scalar_"]), target,
                             value=b.pick([1, -3, 1 << 20]))
        if roll < 0.6:
            return b.attempt(b.pick(["neg_", "abs_", "zero_"]), target)
        if roll < 0.75:
            return b.attempt("fill_", target, value=b.pick([0, 7, -1]))
        return self.indexed(target) if b.shape(target) else None

    def operand(self, shape: tuple[int, ...], dtype: str) -> int:
        """A value to combine with a write's target: a fresh input, or a clone of something
        read from the program's own storages (their values before the write)."""
        b = self.b
        if self.views and b.chance(0.6):
            source = b.current(b.pick(self.views))
            if _broadcasts_to(b.shape(source), shape) and \
                    b.graph.node(source).dtype in ops.FLOAT_DTYPES:
                return b.op("clone", source)
        return b.input(shape if b.chance(0.8) or not shape else shape[-1:], dtype=dtype)

    def assign(self, target: int) -> int | None:
        """``x[i:] = v``: from a clone of the same storage shifted (overlapping copies), or a
        fresh value; ``copy_`` of a broadcast value."""
        b = self.b
        shape = b.shape(target)
        if shape and shape[0] > 1 and b.chance(0.6):
            base = b.current(target)
            shift = b.rng.randint(1, shape[0] - 1)
            src = b.op("clone", b.op("slice", base, index=((None, shape[0] - shift, None),)))
            return b.attempt("setitem", target, src, index=((shift, None, None),))
        if b.chance(0.5):
            return b.attempt("copy_", target, self.operand(shape, b.graph.node(target).dtype))
        index = ((0, None, b.pick([1, 2])),) if shape else (None,)
        return b.attempt("setitem_scalar", target, index=index,
                         value=b.pick([0.0, -0.0, 2.5, -math.inf]))

    def indexed(self, target: int) -> int | None:
        """Writes by index; repeats only where they are defined (accumulated, added)."""
        b = self.b
        shape, dtype = b.shape(target), b.graph.node(target).dtype
        dim = b.rng.randrange(len(shape))
        size = shape[dim]
        if size == 0:
            return None
        name = b.pick(["index_put_", "index_add_", "index_copy_", "index_fill_", "scatter_add_",
                       "scatter_reduce_", "scatter_"])
        if name in ("index_put_", "index_add_", "index_copy_", "index_fill_"):
            accumulate = name == "index_add_" or (name == "index_put_" and b.chance(0.6))
            count = b.rng.randint(1, size + 2) if accumulate else b.rng.randint(1, size)
            index = b.input((count,), role="index" if accumulate else "unique",
                            dtype="int64", bound=size)
            if name == "index_fill_":
                return b.attempt(name, target, index, dim=dim, value=b.pick([0.0, -2.0]))
            if name == "index_put_":  # indexes the first dim: distinct rows are at most its size
                count = count if accumulate else min(count, shape[0])
                values = b.input((count, *shape[1:]), dtype=dtype) if shape[0] else None
                index = b.input((count,), role="index" if accumulate else "unique",
                                dtype="int64", bound=shape[0])
                return b.attempt(name, target, index, values, accumulate=accumulate) \
                    if values is not None else None
            values = b.input(shape[:dim] + (count,) + shape[dim + 1:], dtype=dtype)
            return b.attempt(name, target, index, values, dim=dim)
        rows = b.rng.randint(1, size) if name == "scatter_" else b.rng.randint(1, size + 2)
        index_shape = shape[:dim] + (rows,) + shape[dim + 1:]
        index = b.input(index_shape, role="unique" if name == "scatter_" else "index",
                        dtype="int64", bound=size, dim=dim)
        values = b.input(index_shape, dtype=dtype)
        if name == "scatter_reduce_":
            return b.attempt(name, target, index, values, dim=dim,
                             reduce=b.pick(["sum", "prod", "mean", "amax", "amin"]),
                             include_self=b.chance(0.5))
        return b.attempt(name, target, index, values, dim=dim)

    def out_form(self) -> int | None:
        """``torch.add(a, b, out=t)``: into a whole contiguous storage (Dynamo refuses a
        non-contiguous ``out=``, a view or a strided input, as a graph break)."""
        b = self.b
        dense = [n for n in self.storages if self._dense(n)]
        if not dense:
            return None
        target = b.current(b.pick(dense))
        shape, dtype = b.shape(target), b.graph.node(target).dtype
        if b.chance(0.3) and shape:
            return b.attempt("sum_out", b.input(shape, dtype=dtype), target, dim=-1) \
                if shape[-1] == 1 else None
        if b.chance(0.3):
            return b.attempt("exp_out", self.operand(shape, dtype), target)
        return b.attempt(b.pick(["add_out", "mul_out"]), self.operand(shape, dtype),
                         self.operand(shape, dtype), target)

    def read(self) -> None:
        """An alias read again (after whatever was written since), through a pure op."""
        b = self.b
        source = b.current(b.pick(self.views) if self.views and b.chance(0.7)
                           else b.pick(self.storages))
        if b.graph.node(source).dtype not in ops.FLOAT_DTYPES:
            return
        shape = b.shape(source)
        name = b.pick(["sum", "amax", "mul_scalar", "exp", "cumsum", "clone"])
        if name in ("sum", "amax", "cumsum") and shape:
            node = b.attempt(name, source, dim=b.rng.randrange(len(shape)))
        elif name == "mul_scalar":
            node = b.attempt(name, source, value=b.pick([2.0, 0.1, -3.0]))
        else:
            node = b.attempt(name if name != "cumsum" else "clone", source)
        if node is not None:
            self.reads.append(node)

    def buffer(self) -> None:
        """State a forward updates: running statistics, a counter, an exponential average."""
        b = self.b
        roll = b.rng.random()
        if roll < 0.4:
            channels = b.pick([3, 4, 8])
            x = b.input((2, channels, b.pick([5, 9])))
            stats = [b.input((channels,), role) for role in ("mean", "var", "gamma", "beta")]
            y = b.op("batch_norm_train", x, *stats, momentum=b.pick([0.1, 0.9, 1.0]),
                     eps=1e-5)
            self.reads.append(y)
            return
        if roll < 0.7:
            count = b.input((), "count", dtype=b.pick(["int64", "int32"]))
            b.op("add_scalar_", count, value=1)
            return
        source = b.current(b.pick(self.storages))
        avg = b.input(b.shape(source), role="mean")
        decayed = b.op("mul_scalar_", avg, value=b.pick([0.9, 0.99]))
        b.attempt("add_", decayed, b.op("mul_scalar", source, value=0.1))


def state_body(b: Builder) -> tuple[int, list[int]]:
    """A program with state (see the module docstring). Returns (the value a head may encode,
    the values to output), every one current: no output is an older version of its storage."""
    s = StateBuilder(b)
    for _ in range(b.rng.randint(1, 2)):
        s.input()
    if b.chance(0.5):
        s.computed()
    for _ in range(b.rng.randint(2, 6)):
        step = b.rng.choices([s.write, s.read, s.buffer], [5, 3, 1])[0]
        step()
    if s.passed:
        s.across()
    s.read()
    outputs = [b.current(r) for r in s.reads]
    if s.views and b.chance(0.5):  # a view of written state, returned: its aliasing is judged
        outputs.append(b.current(b.pick(s.views)))
    if not outputs:
        outputs = [b.current(s.storages[0])]
    floats = [o for o in outputs if b.graph.node(o).dtype in ops.FLOAT_DTYPES]
    return (floats or outputs)[0], list(dict.fromkeys(outputs))


def finish(b: Builder, value: int, outputs: list[int]) -> None:
    """The program's outputs: what it read, and maybe an encoding head on a float read."""
    if b.graph.node(value).dtype in ops.FLOAT_DTYPES and b.chance(0.35):
        outputs = [add_head(b, value, outputs), *outputs]
    b.graph.outputs = list(dict.fromkeys(outputs))
    b.graph.remove_dead()
    # Running statistics, averages, weights: a module's buffers and parameters; not where the
    # caller passes views of its inputs (a module's forward takes the arguments it is given).
    if b.chance(0.5) and not b.graph.passed_views():
        as_module(b.graph)


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    try:
        return ops.broadcast([shape, target], {}) == tuple(target)
    except ops.InvalidGraph:
        return False

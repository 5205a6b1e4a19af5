"""The Inductor options a case may carry: an allowlist of numerics knobs, each with its values.

A case file is data, so its ``config`` may only set options that change what is computed, never
ones that name a program, a path, a module or a callable (``cpp.cxx``, ``*_dir``, hooks, custom
passes): those would let a shared file run code when Inductor compiles it. ``check`` refuses
anything else in one line; it runs when a case is loaded and again before a task is compiled.
Whether an allowed knob exists in the installed torch is a separate question (``missing``): knobs
come and go between releases, and an absent one is "not in this torch", never a crash.
"""

from __future__ import annotations

from typing import Any

from fuzzer.errors import CaseError

BOOL = (bool,)
# name -> (accepted types, accepted values or None for any of those types)
ALLOWED: dict[str, tuple[tuple[type, ...], tuple | None]] = {
    **{name: (BOOL, None) for name in (
        "emulate_precision_casts", "eager_numerics.division_rounding",
        "eager_numerics.use_pytorch_libdevice", "eager_numerics.disable_ftz", "split_reductions",
        "online_softmax", "pattern_matcher", "fallback_random", "force_disable_caches",
        "fallback_by_default", "freezing", "cpp_wrapper", "max_autotune", "max_autotune_gemm",
        "max_autotune_pointwise", "coordinate_descent_tuning", "triton.cudagraphs",
        "epilogue_fusion", "aggressive_fusion", "size_asserts", "comprehensive_padding",
        "layout_optimization", "triton.persistent_reductions", "use_fast_math",
        "cpp.use_decompose_tanh", "triton.use_block_ptr", "group_fusion",
        "joint_graph_constant_folding", "conv_1x1_as_mm", "keep_output_stride",
        "implicit_fallbacks", "force_same_precision", "batch_invariant")},
    "cpp.simdlen": ((int, type(None)), None),
    "cpp.enable_floating_point_contract_flag": ((str,), ("off", "on", "fast")),
    "numerics": ((str,), ("default", "strict_pointwise", "strict_reduction", "strict")),
    # Which GEMM implementations max-autotune may choose: "CPP" alone makes the C++ GEMM
    # template (and its fused epilogues) the only choice on the CPU, with no benchmarking.
    "max_autotune_gemm_backends": ((str,), ("ATEN", "CPP", "TRITON", "ATEN,CPP", "CPP,ATEN",
                                            "ATEN,TRITON", "TRITON,CPP", "ATEN,TRITON,CPP")),
    "max_fusion_size": ((int,), None),
    "unroll_reductions_threshold": ((int,), None),
    "triton.multi_kernel": ((int,), (0, 1, 2, 3)),
}
INT_RANGE = (0, 4096)


def check(config: Any) -> dict:
    """The config as a plain dict, or CaseError naming the first key or value not allowed."""
    if not isinstance(config, dict):
        raise CaseError(f"config must be a dict of Inductor options, got {type(config).__name__}")
    for key, value in config.items():
        if key not in ALLOWED:
            raise CaseError(f"config option {str(key)[:80]!r} is not an allowed numerics knob "
                            "(options that name programs, paths, modules or callables are "
                            "refused; allowed: see fuzzer/execute/config.py)")
        types, values = ALLOWED[key]
        if type(value) not in types or (values is not None and value not in values) or \
                (type(value) is int and not INT_RANGE[0] <= value <= INT_RANGE[1]):
            raise CaseError(f"config option {key!r} cannot be {str(value)[:80]!r}")
    return dict(config)


def missing(config: dict) -> list[str]:
    """The keys of ``config`` the installed torch does not have."""
    import torch._inductor.config as inductor

    return [key for key in config if not present(inductor, key)]


def present(module: Any, key: str) -> bool:
    obj = module
    for part in key.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            return False
    return True


class FrozenCount:
    """While active: how many graph values Inductor's freezing turns into constants (parameters
    frozen, values folded from them), by counting its ``replace_node_with_constant`` calls in
    the modules that call it, where this torch has them. ``count`` stays 0 when freezing folds
    nothing, and None when this torch has no such function to count (not measured)."""

    MODULES = ("torch._inductor.freezing", "torch._inductor.constant_folding")

    def __init__(self) -> None:
        self.count: int | None = None
        self._saved: list[tuple[Any, Any]] = []

    def __enter__(self) -> FrozenCount:
        import importlib

        for name in self.MODULES:
            try:
                module = importlib.import_module(name)
            except ImportError:
                continue
            original = getattr(module, "replace_node_with_constant", None)
            if original is None:
                continue
            self.count = self.count or 0
            self._saved.append((module, original))
            vars(module)["replace_node_with_constant"] = self._counting(original)  # a module
        return self

    def _counting(self, original: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count = (self.count or 0) + 1
            return original(*args, **kwargs)

        return counted

    def __exit__(self, *exc: Any) -> None:
        for module, original in self._saved:
            module.replace_node_with_constant = original
        self._saved.clear()

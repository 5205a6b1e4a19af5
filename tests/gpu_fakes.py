"""Fake compiled backends standing in for what a GPU does, so the CUDA path is tested on the CPU:
sticky CUDA errors that poison a process, running out of device memory, CUDA graphs' static
outputs, run-to-run nondeterminism, and numerics that follow torch.backends flags (TF32). Each is
a torch.compile backend named ``tests.gpu_fakes:<name>``; they run in worker processes, so this
module must stay importable there. The error messages are torch's own (fuzzer/execute/faults.py).
"""

from __future__ import annotations

import math

import torch

from tests.fakes import _map_outputs, uint8_plus_one

ILLEGAL_ACCESS = ("CUDA error: an illegal memory access was encountered\n"
                  "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/"
                  "cuda-runtime-api/group__CUDART__TYPES.html for more information.\n"
                  "CUDA kernel errors might be asynchronously reported at some other API call, "
                  "so the stacktrace below might be incorrect.")
DEVICE_ASSERT = "CUDA error: device-side assert triggered"
OUT_OF_MEMORY = ("CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
                 "139.81 GiB of which 1.06 GiB is free. Of the allocated memory 130.00 GiB is "
                 "allocated by PyTorch, and 2.00 GiB is reserved by PyTorch but unallocated.")
_poisoned: dict[str, BaseException | None] = {"error": None}


def targeted(args) -> bool:
    """The cases a fault hits: inputs of a multiple of 4 elements in all (a deterministic
    subset a test can compute for generated cases too)."""
    return sum(a.numel() for a in args if isinstance(a, torch.Tensor)) % 4 == 0


def _sticky(gm, make_error):
    """Raises ``make_error()`` on a targeted case; from then on every compiled call in this
    process raises the same, as every CUDA call does once a sticky error poisoned the context."""

    def run(*args):
        if _poisoned["error"] is None and targeted(args):
            _poisoned["error"] = make_error()
        if _poisoned["error"] is not None:
            raise _poisoned["error"]
        return gm(*args)

    return run


def illegal_memory_access(gm, example_inputs):
    """An illegal memory access (``torch.AcceleratorError``, as torch 2.8 and later raise it)."""
    return _sticky(gm, lambda: torch.AcceleratorError(ILLEGAL_ACCESS))


def device_side_assert(gm, example_inputs):
    """A device-side assert as torch before 2.8 raised it: a plain RuntimeError."""
    return _sticky(gm, lambda: RuntimeError(DEVICE_ASSERT))


def out_of_memory(gm, example_inputs):
    """The GPU runs out of memory on targeted cases (not sticky: the next case runs)."""

    def run(*args):
        if targeted(args):
            raise torch.OutOfMemoryError(OUT_OF_MEMORY)
        return gm(*args)

    return run


def out_of_resource(gm, example_inputs):
    """A kernel asks for more shared memory than the GPU has (Inductor's static launcher raises
    OutOfMemoryError for it): a compiled kernel that cannot run, a crash."""

    def run(*args):
        raise torch.OutOfMemoryError("out of resource: triton_poi_fused_0 Required: 262144 "
                                     "Hardware limit: 232448 Reducing block sizes or `num_stages` "
                                     "may help.")

    return run


def _bump_on(gm, parity: int):
    """``gm``, except that the first uint8 output is off by one at element 0 on the calls whose
    number (from 1) has this parity: 1, the first of each two runs; 0, the second."""
    planted = uint8_plus_one(gm, None)
    calls = {"n": 0}

    def run(*args):
        calls["n"] += 1
        return planted(*args) if calls["n"] % 2 == parity else gm(*args)

    return run


def nondeterministic_code(gm, example_inputs):
    """Run-to-run nondeterminism in a discrete output (as atomics make it): the first of two
    runs of one compile flips a uint8 code, the second does not."""
    return _bump_on(gm, 1)


def nondeterministic_inf(gm, example_inputs):
    """The first of two runs of one compile gives inf at the first float output's element 0."""
    calls = {"n": 0}

    def change(outs):
        calls["n"] += 1
        if calls["n"] % 2 == 1:
            for i, out in enumerate(outs):
                if out.is_floating_point():
                    outs[i] = out.clone()
                    outs[i].view(-1)[0] = math.inf
                    break
        return outs

    return _map_outputs(gm, change)


def static_outputs(gm, example_inputs):
    """Like CUDA graphs (``reduce-overhead``): every call writes its outputs into the same static
    buffers and returns those, so the next call overwrites a call's outputs in place. The second
    call's uint8 output is off by one (run-to-run nondeterminism): a runner that does not clone
    the first run's outputs before the second sees the second's values twice and misses it."""
    bumped = _bump_on(gm, 0)
    buffers: list[torch.Tensor] = []

    def run(*args):
        outs = bumped(*args)
        seq = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        if not buffers:
            buffers.extend(torch.empty_like(o) for o in seq)
        for buffer, out in zip(buffers, seq):
            buffer.copy_(out)
        return tuple(buffers) if isinstance(outs, (tuple, list)) else buffers[0]

    return run


def plant_if_tf32(gm, example_inputs):
    """uint8 +1 whenever cuDNN or cuBLAS TF32 is on (read at call time): a divergence that the
    torch.backends flags the worker pins decide, and triage's ``tf32=off`` removes."""
    planted = uint8_plus_one(gm, example_inputs)

    def run(*args):
        on = torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32
        return planted(*args) if on else gm(*args)

    return run


def plant_if_matmul_tf32(gm, example_inputs):
    """uint8 +1 only when cuBLAS TF32 is on (off by default): a divergence repro.py shows only
    if it pins the case's flags."""
    planted = uint8_plus_one(gm, example_inputs)

    def run(*args):
        return planted(*args) if torch.backends.cuda.matmul.allow_tf32 else gm(*args)

    return run


# Real CUDA faults, for tests/test_cuda.py on a GPU (on the CPU they are plain errors).


def cuda_index_out_of_bounds(gm, example_inputs):
    """On targeted cases, an indexing kernel reads far out of bounds: on CUDA a device-side
    assert, which surfaces asynchronously and poisons the process's context."""

    def run(*args):
        if targeted(args):
            flat = args[0].reshape(-1)
            return (flat[torch.tensor([1 << 30], device=flat.device)],)
        return gm(*args)

    return run


def cuda_allocates_a_petabyte(gm, example_inputs):
    """On targeted cases, asks the caching allocator for a petabyte: a real out of memory."""

    def run(*args):
        if targeted(args):
            torch.empty(1 << 50, dtype=torch.uint8, device=args[0].device)
        return gm(*args)

    return run


MIXED_DEVICES = ("Expected all tensors to be on the same device, but found at least two devices, "
                 "cuda:0 and cpu!")


class OnDevice(torch.Tensor):
    """A tensor that stands for one in a CUDA device's memory, to test on the CPU what mixes host
    and device tensors: an op on it and a host tensor of one element or more raises torch's own
    error (a 0-dim host tensor is a scalar CUDA takes), and ``.cpu()`` is its one way to the
    host (``.to(device)`` keeps it where it is, as ``.to(e.device)`` does on a GPU)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.cpu:
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs).as_subclass(torch.Tensor)
        tensors = [t for t in torch.utils._pytree.tree_leaves((args, kwargs))
                   if isinstance(t, torch.Tensor)]
        if any(isinstance(t, cls) for t in tensors) and \
                any(not isinstance(t, cls) and t.dim() > 0 for t in tensors):
            raise RuntimeError(MIXED_DEVICES)
        return super().__torch_function__(func, types, args, kwargs)


def on_device(value):
    """``value`` (a tensor, or a list or dict of them) as ``OnDevice`` tensors."""
    return torch.utils._pytree.tree_map(
        lambda t: t.as_subclass(OnDevice) if isinstance(t, torch.Tensor) else t, value)

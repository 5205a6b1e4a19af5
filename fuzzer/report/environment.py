"""The environment a draft reports: ``python -m torch.utils.collect_env`` (once per process and
once per night, cached beside the night's drafts) and the lines of it a maintainer reads for
numerics, with ATen's CPU capability (vectorized math differs by ISA).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from fuzzer import clock
from fuzzer.corpus.files import atomic_write
from fuzzer.execute import zygote

ENV_TIMEOUT = 300.0  # python -m torch.utils.collect_env
ENV_UNFINISHED = "python -m torch.utils.collect_env did not finish"


_ENV: list[str] = []  # this process's one finished collect_env


def collect_env(timeout: float = ENV_TIMEOUT) -> str:
    """``python -m torch.utils.collect_env``, run once per process (within ``timeout``; an
    answer cut short is not kept)."""
    if _ENV:
        return _ENV[0]
    try:  # forked from the zygote: torch is imported already there (the clock told as ever)
        proc = clock.run_subprocess(["-m", "torch.utils.collect_env"], timeout, run=zygote.run)
    except subprocess.TimeoutExpired:
        return f"{ENV_UNFINISHED} within {timeout:.0f} s"
    text = proc.stdout.strip() or f"collect_env failed: {proc.stderr.strip()[-300:]}"
    _ENV.append(text)
    return text


def collect_env_cached(path: Path, timeout: float = ENV_TIMEOUT) -> str:
    """collect_env, cached in a file (one run per night, even across a resumed night); an
    answer cut short by ``timeout`` is not cached."""
    if path.is_file() and path.stat().st_size:
        return path.read_text()
    text = collect_env(timeout)
    if not text.startswith(ENV_UNFINISHED):
        atomic_write(path, text + "\n")
    return text


ENV_LINES = ("PyTorch version", "CUDA used to build PyTorch", "OS", "GCC version",
             "Clang version", "Python version", "Is CUDA available", "CUDA runtime version",
             "GPU models and configuration", "Nvidia driver version", "Model name",
             "[pip3] torch", "[pip3] triton", "[pip3] numpy", "[conda] torch")
CUDA_LINES = ("CUDA runtime version", "GPU models and configuration", "Nvidia driver version")


def versions_text(env_text: str) -> str:
    """The lines of collect_env a maintainer reads for numerics (versions, OS, compilers, CPU or
    GPU model) and ATen's CPU capability (vectorized math differs by ISA); not 'Could not
    collect' ones."""
    no_cuda = "Is CUDA available: False" in env_text
    kept = [line.rstrip() for line in env_text.splitlines()
            if line.startswith(ENV_LINES) and not line.rstrip().endswith(("Could not collect",
                                                                          "N/A"))
            and not (no_cuda and line.startswith(CUDA_LINES))]
    import torch

    capability = torch.backends.cpu.get_cpu_capability() \
        if hasattr(torch.backends.cpu, "get_cpu_capability") else "unknown"
    return "\n".join([*kept, f"ATen CPU capability: {capability}"])

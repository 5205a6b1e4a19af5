"""Long-lived, isolated worker processes: a crash, hang or OOM costs one worker, never the campaign.

Each worker is ``python -m fuzzer.execute.workers`` talking length-prefixed ``torch.save`` frames
over its stdin/stdout; everything it prints goes to a log file instead. A worker pays the
first-compile cost once (imports, precompiled headers) and then serves many tasks. Environment
variables and knobs read at import time are set before torch is imported, which is why this is a
fresh interpreter and not a multiprocessing fork. This module imports torch only inside the child.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fuzzer.errors import HarnessError

HEADER = struct.Struct("<Q")
READY = b"ready"
UNUSABLE = b"unusable:"  # the child's first frame when it cannot work at all (no GPU)


class WorkerLost(RuntimeError):
    """The worker died or hung; ``kind`` is ``crash`` or ``timeout``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _python_path() -> str:
    # Test doubles named as module:attr must import in the child just as they do here.
    paths = [p for p in [os.getcwd(), *sys.path] if p and os.path.isdir(p)]
    return os.pathsep.join(dict.fromkeys(paths))


class Worker:
    """One child interpreter. ``run`` sends a task and waits at most ``timeout`` seconds."""

    def __init__(self, device: str = "cpu", threads: int = 1, env: dict[str, str] | None = None,
                 warmup: bool = True, gpu: str | None = None) -> None:
        self.log = Path(tempfile.mkstemp(prefix="numfuzz-worker-", suffix=".log")[1])
        child_env = {**os.environ, "PYTHONPATH": _python_path(), **(env or {})}
        if gpu is not None:
            child_env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        args = [sys.executable, "-m", "fuzzer.execute.workers", device, str(threads),
                str(int(warmup))]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=log, env=child_env, start_new_session=True)
        self.started = False

    def wait_ready(self, timeout: float = 600) -> None:
        if not self.started:
            first = self._read(timeout)
            if first.startswith(UNUSABLE):  # the machine, not a case: stop loudly
                self.kill()
                raise HarnessError(first[len(UNUSABLE):].decode(errors="replace"))
            if first != READY:
                raise WorkerLost("crash", "worker did not start")
            self.started = True

    def run(self, payload: bytes, timeout: float) -> bytes:
        """Send one frame and return the reply frame, or raise WorkerLost (the worker is gone)."""
        self.wait_ready()
        try:
            self.proc.stdin.write(HEADER.pack(len(payload)) + payload)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._lost("crash") from None
        return self._read(timeout)

    def _read(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        size = HEADER.unpack(self._read_exact(HEADER.size, deadline))[0]
        return self._read_exact(size, deadline)

    def _read_exact(self, n: int, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise self._lost("timeout")
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                raise self._lost("crash")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _lost(self, kind: str) -> WorkerLost:
        self.kill()
        code = self.proc.returncode
        if kind == "timeout":
            message = "no answer before the per-case timeout"
        elif code is not None and code < 0:
            message = f"worker killed by {signal.Signals(-code).name}"
        else:
            message = f"worker exited with code {code}"
        tail = self.log_tail()
        return WorkerLost(kind, f"{message}{': ' + tail if tail else ''}")

    def log_tail(self, lines: int = 1) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        useful = [ln for ln in text if ln.strip() and "Warning" not in ln]
        return " | ".join(useful[-lines:])[:300]

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def close(self) -> None:
        self.kill()
        self.log.unlink(missing_ok=True)


class Runner:
    """Runs tasks on one worker, replacing it whenever it is lost: what campaigns are made of."""

    def __init__(self, device: str = "cpu", threads: int = 1, timeout: float = 300,
                 env: dict[str, str] | None = None, gpu: str | None = None,
                 warmup: bool = True) -> None:
        self.options = {"device": device, "threads": threads, "env": env, "gpu": gpu,
                        "warmup": warmup}
        self.timeout = timeout
        self.worker: Worker | None = None

    @property
    def device(self) -> str:
        return self.options["device"]

    def start(self) -> None:
        if self.worker is None:
            self.worker = Worker(**self.options)

    def run(self, task: Any) -> dict:
        """Run a runner.Task; a lost worker becomes a crash/timeout verdict and a fresh worker."""

        self.start()
        try:
            self.worker.wait_ready()
            reply = self.worker.run(task.to_bytes(), self.timeout)
        except WorkerLost as lost:
            self.worker.close()
            self.worker = None
            return {"verdict": {"kind": lost.kind, "message": str(lost)}}
        import io

        import torch

        return torch.load(io.BytesIO(reply), weights_only=True)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


# ---------------------------------------------------------------- GPUs


def visible_gpus() -> list[str]:
    """The GPUs this process may give its workers, as CUDA_VISIBLE_DEVICES entries."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def assign_gpus(workers: int, chosen: Sequence[int] | None, visible: list[str]) -> list[str]:
    """The one GPU each worker slot sees: round-robin over ``chosen`` (indices into ``visible``;
    default all), so with more workers than GPUs several workers share one."""
    if not visible:
        raise HarnessError("--device cuda, but no CUDA device is visible to numfuzz")
    picks = list(range(len(visible))) if chosen is None else list(chosen)
    bad = [i for i in picks if not 0 <= i < len(visible)]
    if bad or not picks:
        raise HarnessError(f"--gpus {','.join(map(str, picks))}: this machine shows GPUs "
                           f"0..{len(visible) - 1}")
    return [visible[picks[slot % len(picks)]] for slot in range(workers)]


GPU_BYTES_PER_WORKER = 6 << 30  # a CUDA context, Inductor's autotuning and a case's tensors
CORES_PER_WORKER = 2  # Inductor compiles in the worker: one core compiling, one running
MAX_WORKERS_PER_GPU = 4  # past this, workers wait on the GPU more than they compile


def workers_per_gpu(gpu_bytes: int, cores: int, gpus: int) -> int:
    """How many workers share one GPU by default: as many as its memory and the cores allow."""
    return max(1, min(gpu_bytes // GPU_BYTES_PER_WORKER, cores // (CORES_PER_WORKER * gpus),
                      MAX_WORKERS_PER_GPU))


def default_cuda_workers(chosen: Sequence[int] | None = None) -> int:
    """``--workers`` when not given on CUDA: ``workers_per_gpu`` on each chosen GPU."""
    import torch

    picks = list(range(torch.cuda.device_count())) if chosen is None else list(chosen)
    if not picks:
        return 1
    memory = min(torch.cuda.get_device_properties(i).total_memory for i in picks)
    return len(picks) * workers_per_gpu(memory, os.cpu_count() or 1, len(picks))


# ---------------------------------------------------------------- the child side


def send_frame(out: Any, data: bytes) -> None:
    out.write(HEADER.pack(len(data)) + data)
    out.flush()



def _serve(device: str, threads: int, warmup: bool) -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever the compiler prints must not corrupt the protocol stream
    inp = os.fdopen(0, "rb")

    import io

    import torch

    from fuzzer.execute import original, runner

    torch.set_num_threads(max(1, threads))
    if device.startswith("cuda") and not torch.cuda.is_available():
        seen = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
        send_frame(out, UNUSABLE + f"a {device} worker sees no CUDA device "
                   f"(CUDA_VISIBLE_DEVICES={seen})".encode())
        return
    if warmup:
        runner.compile_model(lambda x: torch.sin(x) + 1, "inductor")(torch.ones(4))
        torch._dynamo.reset()

    send_frame(out, READY)
    while True:
        head = inp.read(HEADER.size)
        if len(head) < HEADER.size:
            return
        task = runner.Task.from_bytes(inp.read(HEADER.unpack(head)[0]))
        try:
            run = original.run_original if task.model_file else runner.run_task
            result = run(task)
        except Exception as err:  # a harness error on this task: report it, keep serving
            result = {"verdict": {"kind": "skip",
                                  "message": f"{runner.HARNESS_ERROR}: {runner._error_line(err)}"}}
        buf = io.BytesIO()
        torch.save(result, buf)
        send_frame(out, buf.getvalue())


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1")

"""Long-lived, isolated worker processes: a crash, hang or OOM costs one worker, never the campaign.

Each worker is ``python -m fuzzer.workers`` talking length-prefixed ``torch.save`` frames over its
stdin/stdout; everything it prints goes to a log file instead. A worker pays the first-compile cost
once (imports, precompiled headers) and then serves many tasks. Environment variables and knobs read
at import time are set before torch is imported, which is why this is a fresh interpreter and not a
multiprocessing fork. This module imports torch only inside the child.
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
from pathlib import Path
from typing import Any

HEADER = struct.Struct("<Q")
READY = b"ready"


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
                 warmup: bool = True, gpu: int | None = None) -> None:
        self.log = Path(tempfile.mkstemp(prefix="numfuzz-worker-", suffix=".log")[1])
        child_env = {**os.environ, "PYTHONPATH": _python_path(), **(env or {})}
        if gpu is not None:
            child_env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        args = [sys.executable, "-m", "fuzzer.workers", device, str(threads), str(int(warmup))]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=log, env=child_env, start_new_session=True)
        self.started = False

    def wait_ready(self, timeout: float = 600) -> None:
        if not self.started:
            if self._read(timeout) != READY:
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
                 env: dict[str, str] | None = None, gpu: int | None = None,
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


# ---------------------------------------------------------------- the child side


def _serve(device: str, threads: int, warmup: bool) -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever the compiler prints must not corrupt the protocol stream
    inp = os.fdopen(0, "rb")

    import io

    import torch

    from fuzzer import runner

    torch.set_num_threads(max(1, threads))
    if warmup:
        runner.compile_model(lambda x: torch.sin(x) + 1, "inductor")(torch.ones(4))
        torch._dynamo.reset()

    def send(data: bytes) -> None:
        out.write(HEADER.pack(len(data)) + data)
        out.flush()

    send(READY)
    while True:
        head = inp.read(HEADER.size)
        if len(head) < HEADER.size:
            return
        task = runner.Task.from_bytes(inp.read(HEADER.unpack(head)[0]))
        try:
            result = runner.run_task(task)
        except Exception as err:  # a harness error on this task: report it, keep serving
            result = {"verdict": {"kind": "skip",
                                  "message": f"harness error: {runner._error_line(err)}"}}
        buf = io.BytesIO()
        torch.save(result, buf)
        send(buf.getvalue())


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1")

"""Long-lived, isolated worker processes: a crash, hang or OOM costs one worker, never the campaign.

So does a CUDA error that poisons the worker's context (``faults``): the worker answers the case
that raised it, then exits, and its runner starts a fresh one for the next case.

Each worker is ``python -m fuzzer.execute.workers`` talking length-prefixed ``torch.save`` frames
over its stdin/stdout; everything it prints goes to a log file instead. A worker pays the
first-compile cost once (imports, precompiled headers) and then serves many tasks. Environment
variables and knobs read at import time must be set before torch is imported, so a worker is a
fresh process: on the CPU, forked from the zygote (``zygote``: torch, Dynamo and Inductor already
imported, nothing run) wherever its environment differs from the zygote's only in what no import
reads (``Forked``), else a fresh ``python -m fuzzer.execute.workers``. This module imports torch
only inside the child.

Long runs (``Recycle``): Dynamo and Inductor keep state per process and Inductor writes every
kernel it compiles to its cache folder, so a campaign's workers are replaced after ``cases``
tasks or once their resident memory passes ``rss_bytes``, and each one compiles into a private
cache folder that is deleted with it. Disk use over a night is then bounded by one worker's
cache per slot (plus Inductor's precompiled headers, which it keeps in its default folder: one
per set of compile flags), at the price of one cold warm-up compile per recycle (about 8 s on
the CPU). The temp files of a driver that was killed (``kill -9``) are swept by the next one.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from fuzzer import clock
from fuzzer.device import Device
from fuzzer.errors import HarnessError
from fuzzer.execute import faults, zygote
from fuzzer.judge.kinds import Kind

if TYPE_CHECKING:  # torch is imported in the child, and by the driver only when a reply comes
    from fuzzer.execute.task import RunResult, Task

HEADER = struct.Struct("<Q")
READY = b"ready"
UNUSABLE = b"unusable:"  # the child's first frame when it cannot work at all (no GPU)
TEMP_PREFIX = "numfuzz-worker-"  # then the driver's pid: numfuzz-worker-<pid>-…
CACHE_ENV = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
# The pid of the process a worker serves: its parent when started afresh, not when forked from
# the zygote (whose child it is). numfuzz itself does not read it; code run inside a worker
# that must act on its driver does (the suite's test doubles that kill or stop it).
DRIVER_ENV = "NUMFUZZ_DRIVER_PID"


# torch's own log lines (glog's format): a level letter (Info, Warning, Error, Fatal, Verbose),
# the date, the time and a thread id (then ``file.py:line] …``). The one pattern numfuzz reads
# them by.
TORCH_LOG = re.compile(r"^([IWEFV])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ")


def torch_log_level(line: str) -> str:
    """The level letter of a line torch's own logging wrote ('' for any other line)."""
    found = TORCH_LOG.match(line)
    return found.group(1) if found else ""


def chatter(line: str) -> bool:
    """Is this line of a worker's or script's stderr only chatter (blank, a Python warning and
    the indented source line it quotes, a traceback's frames, torch's info/warning log), never
    the reason it died?"""
    return not line.strip() or line.startswith((" ", "\t")) or "Warning" in line or \
        torch_log_level(line) in ("I", "W", "V")


@dataclass(frozen=True)
class Recycle:
    """When a long-lived worker is replaced by a fresh one, and where it compiles.

    250 cases is 10 to 20 minutes of one CPU worker and a few minutes of a GPU one: the cold
    warm-up a recycle costs is about 1% of that, and Dynamo's per-process state never grows for
    long. 4 GiB of resident memory is well above what a worker needs for these small graphs
    (bench/RESULTS.md, the soak) and well below a share of a 16-core box's memory."""

    cases: int | None = 250
    rss_bytes: int | None = 4 << 30
    private_cache: bool = True  # compile into a folder of its own, deleted with the worker


NEVER = Recycle(None, None, False)  # one worker for as long as the runner lives


class WorkerLost(RuntimeError):
    """The worker died or hung; ``kind`` is ``crash`` or ``timeout``."""

    def __init__(self, kind: Kind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _python_path() -> str:
    # Test doubles named as module:attr must import in the child just as they do here.
    paths = [p for p in [os.getcwd(), *sys.path] if p and os.path.isdir(p)]
    return os.pathsep.join(dict.fromkeys(paths))


class Forked:
    """A CPU worker forked from the zygote (``zygote``: torch, Dynamo and Inductor already
    imported) instead of started as ``python -m fuzzer.execute.workers``, seen as ``Worker``
    sees a subprocess: ``pid`` (its session), ``stdin``/``stdout`` (the protocol's pipes),
    ``poll``, ``wait`` and ``returncode`` (negative: the signal that killed it)."""

    def __init__(self, device: str, threads: int, warmup: bool, env: dict[str, str],
                 log: Path) -> None:
        from multiprocessing.connection import Connection

        task_r, task_w = os.pipe()  # the parent writes tasks, the child reads them
        reply_r, reply_w = os.pipe()  # and the other way for its answers
        ends = (Connection(task_r, writable=False), Connection(reply_w, readable=False))
        try:
            self.child = zygote.start(_serve_forked, (*ends, device, threads, warmup),
                                      env=env, stderr=str(log))
        except BaseException:
            os.close(task_w)
            os.close(reply_r)
            raise
        finally:
            for end in ends:  # the child has its own copies now
                end.close()
        assert self.child.pid is not None  # started
        self.pid: int = self.child.pid
        self.stdin = os.fdopen(task_w, "wb")
        self.stdout = os.fdopen(reply_r, "rb")

    def poll(self) -> int | None:
        return self.child.exitcode

    @property
    def returncode(self) -> int | None:
        return self.child.exitcode

    def wait(self) -> int | None:
        self.child.join()
        return self.child.exitcode


class Worker:
    """One child interpreter. ``run`` sends a task and waits at most ``timeout`` seconds."""

    def __init__(self, device: str = "cpu", threads: int = 1, env: dict[str, str] | None = None,
                 warmup: bool = True, gpu: str | None = None,
                 private_cache: bool = False) -> None:
        prefix = f"{TEMP_PREFIX}{os.getpid()}-"
        fd, log = tempfile.mkstemp(prefix=prefix, suffix=".log")
        os.close(fd)  # the child opens it by name; one descriptor per worker start adds up
        self.log = Path(log)
        child_env = {**os.environ, "PYTHONPATH": _python_path(), **(env or {}),
                     DRIVER_ENV: str(os.getpid())}
        self.cache: Path | None = None
        if private_cache and not any(name in (env or {}) for name in CACHE_ENV):
            self.cache = Path(tempfile.mkdtemp(prefix=prefix, suffix=".cache"))
            child_env["TORCHINDUCTOR_CACHE_DIR"] = str(self.cache / "inductor")
            child_env["TRITON_CACHE_DIR"] = str(self.cache / "triton")
        if gpu is not None:
            child_env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        args = [sys.executable, "-m", "fuzzer.execute.workers", device, str(threads),
                str(int(warmup))]
        self.proc: Forked | subprocess.Popen[bytes]
        try:
            if Device(device).is_cpu and zygote.forkable(child_env):  # torch already imported
                self.proc = Forked(device, threads, warmup, child_env, self.log)
            else:
                with open(self.log, "wb") as log_file:
                    self.proc = subprocess.Popen(args, stdin=subprocess.PIPE,
                                                 stdout=subprocess.PIPE, stderr=log_file,
                                                 env=child_env, start_new_session=True)
        except BaseException:  # no child (out of processes or descriptors): leave nothing behind
            self.log.unlink(missing_ok=True)
            if self.cache is not None:
                shutil.rmtree(self.cache, ignore_errors=True)
            raise
        self.started = False

    def wait_ready(self, timeout: float = 600) -> None:
        if not self.started:
            first = self._read(timeout)
            if first.startswith(UNUSABLE):  # the machine, not a case: stop loudly
                self.kill()
                raise HarnessError(first[len(UNUSABLE):].decode(errors="replace"))
            if first != READY:
                raise WorkerLost(Kind.CRASH, "worker did not start")
            self.started = True

    def run(self, payload: bytes, timeout: float) -> bytes:
        """Send one frame and return the reply frame, or raise WorkerLost (the worker is gone)."""
        self.wait_ready()
        assert self.proc.stdin is not None  # piped at the start
        try:
            self.proc.stdin.write(HEADER.pack(len(payload)) + payload)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._lost(Kind.CRASH) from None
        return self._read(timeout)

    def _read(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        size = HEADER.unpack(self._read_exact(HEADER.size, deadline))[0]
        return self._read_exact(size, deadline)

    def _read_exact(self, n: int, deadline: float) -> bytes:
        assert self.proc.stdout is not None  # piped at the start
        fd = self.proc.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise self._lost(Kind.TIMEOUT)
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                raise self._lost(Kind.CRASH)
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _lost(self, kind: Kind) -> WorkerLost:
        self.kill()
        code = self.proc.returncode
        if kind == Kind.TIMEOUT:
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
        useful = [ln for ln in text if not chatter(ln)]
        return " | ".join(useful[-lines:])[:300]

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def rss_bytes(self) -> int | None:
        """The worker's resident memory (Linux), or None where it cannot be read."""
        try:
            with open(f"/proc/{self.proc.pid}/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        """Kill the worker and remove every file it had: log, pipes, private cache."""
        self.kill()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # unflushed bytes to a dead child
                    pipe.close()
        self.log.unlink(missing_ok=True)
        if self.cache is not None:
            shutil.rmtree(self.cache, ignore_errors=True)


def sweep_stale_temp(directory: str | None = None) -> int:
    """Remove the logs and caches that workers of drivers no longer alive left in the temp folder
    (a ``kill -9`` gives no driver the chance to clean up); returns how many were removed."""
    removed = 0
    root = Path(directory or tempfile.gettempdir())
    for path in root.glob(f"{TEMP_PREFIX}*"):
        match = re.match(rf"{TEMP_PREFIX}(\d+)-", path.name)
        if match is None or _alive(int(match.group(1))):
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class LocalRunner:
    """Runs tasks on one worker, replacing it whenever it is lost and, under ``recycle``, after
    so many tasks or above a memory limit: what campaigns are made of."""

    def __init__(self, device: str = "cpu", threads: int = 1, timeout: float = 300,
                 env: dict[str, str] | None = None, gpu: str | None = None,
                 warmup: bool = True, recycle: Recycle = NEVER) -> None:
        self._device, self._threads, self._env, self._gpu = device, threads, env, gpu
        self._warmup = warmup
        self.timeout = timeout
        self.recycle = recycle
        self.worker: Worker | None = None
        self.served = 0  # tasks the current worker answered
        self.recycled = 0  # workers replaced under ``recycle`` (not counting lost ones)
        self.replaced = 0  # workers replaced because a CUDA error poisoned their context

    @property
    def device(self) -> str:
        return self._device

    def start(self) -> None:
        if self.worker is None:
            self.worker = Worker(self._device, self._threads, self._env, self._warmup, self._gpu,
                                 self.recycle.private_cache)
            self.served = 0

    def run(self, task: Task, timeout: float | None = None) -> RunResult:
        """Run a task; a lost worker becomes a crash/timeout verdict and a fresh worker.
        ``timeout``: at most this long for this task, a worker start included (a caller's
        deadline, in seconds of the budget clock, ``fuzzer.clock``), where shorter than the
        runner's own. The run's cost is told to that clock."""
        from fuzzer.execute.task import RunResult

        self.start()
        assert self.worker is not None  # start() made one
        began = time.monotonic()
        budget = self.timeout if timeout is None else min(self.timeout, timeout)
        wait = None if timeout is None else clock.wait_limit(timeout)  # real seconds
        try:
            self.worker.wait_ready(600 if wait is None else max(0.0, wait))
            limit = self.timeout if wait is None else \
                min(self.timeout, max(0.0, wait - (time.monotonic() - began)))
            reply = self.worker.run(task.to_bytes(), limit)
        except WorkerLost as lost:
            self.worker.close()
            self.worker = None
            clock.spent(clock.RUN, budget, cut=lost.kind == Kind.TIMEOUT)
            return RunResult.lost(faults.as_memory_unsafe(lost.kind, str(lost)), str(lost))
        in_time = clock.spent(clock.RUN, budget)  # the budget clock's hook (``fuzzer.clock``)
        self.served += 1
        if not in_time:  # a simulated clock: this run outlasted its time there, so it was cut
            return RunResult.lost(Kind.TIMEOUT, "no answer before the per-case timeout")
        import io

        import torch

        result = RunResult.from_dict(torch.load(io.BytesIO(reply), weights_only=True))
        if result.context_lost:  # a sticky CUDA error: the case has its verdict, the worker goes
            self.close()
            self.replaced += 1
        elif self._worn_out():
            self.close()
            self.recycled += 1
        return result

    def _worn_out(self) -> bool:
        """Has the current worker served its ``recycle.cases`` or passed its memory limit?"""
        if self.recycle.cases is not None and self.served >= self.recycle.cases:
            return True
        if self.recycle.rss_bytes is None or self.worker is None:
            return False
        rss = self.worker.rss_bytes()
        return rss is not None and rss > self.recycle.rss_bytes

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


# What one CPU worker and its share of a night's processing hold at once: the worker's own
# resident memory after a night of cases (about 1.2 GiB here, recycled above 4 GiB), and the
# knob worker a lane starts under another environment while it triages (bench/results/36).
CPU_BYTES_PER_WORKER = 3 << 30
# Cores per CPU worker: a worker's compile and its run use one core (torch threads: 1, and
# Inductor's C++ compile runs in the worker's own process on a small graph).
CORES_PER_CPU_WORKER = 1
# torch's intra-op threads in every worker, campaign, minimizer and triage alike, and in every
# repro (``ReproSpec.THREADS``): Inductor's CPU code depends on it (one thread runs a float16
# ``scatter_add_`` as generated code, rounding after each add; more fall back to ATen's), so a
# case judged at one count and replayed at another is not the code that ran.
WORKER_THREADS = 1


def default_cpu_workers(cores: int | None = None, memory_bytes: int | None = None) -> int:
    """``--workers`` when not given on the CPU: one per core, as many as memory holds at
    ``CPU_BYTES_PER_WORKER`` each (the machine's available memory, read from /proc/meminfo)."""
    cores = cores if cores is not None else len(os.sched_getaffinity(0))
    memory_bytes = memory_bytes if memory_bytes is not None else available_memory()
    by_memory = memory_bytes // CPU_BYTES_PER_WORKER if memory_bytes else cores
    return max(1, min(cores // CORES_PER_CPU_WORKER, by_memory))


def available_memory() -> int | None:
    """Bytes of memory available to new processes (``MemAvailable``); None where unreadable."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def default_cuda_workers(chosen: Sequence[int] | None = None) -> int:
    """``--workers`` when not given on CUDA: ``workers_per_gpu`` on each chosen GPU."""
    import torch

    picks = list(range(torch.cuda.device_count())) if chosen is None else list(chosen)
    if not picks:
        return 1
    memory = min(torch.cuda.get_device_properties(i).total_memory for i in picks)
    return len(picks) * workers_per_gpu(memory, os.cpu_count() or 1, len(picks))


WORKERS_ENV = "NUMFUZZ_WORKERS"  # the default --workers, where a machine wants its own


def default_workers(device: str, chosen: Sequence[int] | None = None) -> int:
    """``--workers`` when not given: ``NUMFUZZ_WORKERS`` where set (a positive integer), else
    ``default_cuda_workers`` on CUDA and ``default_cpu_workers`` on the CPU."""
    given = os.environ.get(WORKERS_ENV, "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    return default_cuda_workers(chosen) if Device(device).is_cuda else default_cpu_workers()


# ---------------------------------------------------------------- the child side


def send_frame(out: BinaryIO, data: bytes) -> None:
    out.write(HEADER.pack(len(data)) + data)
    out.flush()



def _serve(device: str, threads: int, warmup: bool) -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever the compiler prints must not corrupt the protocol stream
    inp = os.fdopen(0, "rb")

    import torch

    from fuzzer.execute import failures, faults, original, runner
    from fuzzer.execute import task as wire

    torch.set_num_threads(max(1, threads))
    if Device(device).is_cuda and not torch.cuda.is_available():
        seen = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
        send_frame(out, UNUSABLE + f"a {device} worker sees no CUDA device "
                   f"(CUDA_VISIBLE_DEVICES={seen})".encode())
        return
    if warmup:
        runner.Recipe().compile(lambda x: torch.sin(x) + 1)(torch.ones(4))
        torch._dynamo.reset()

    send_frame(out, READY)
    while True:
        head = inp.read(HEADER.size)
        if len(head) < HEADER.size:
            return
        try:
            task = wire.Task.from_bytes(inp.read(HEADER.unpack(head)[0]))
            run = original.run_original if task.model_file else runner.run_task
            result = run(task)
        except Exception as err:  # a harness error on this task: report it, keep serving
            line = failures.error_line(err)
            result = wire.RunResult(wire.harness_error(line),
                                    context_lost=faults.poisons_context(line))
        result.context_lost = result.context_lost or _context_broken()
        if result.verdict.message.startswith(faults.OUT_OF_MEMORY):
            _free_device_memory()
        send_frame(out, answer(result))
        if result.context_lost:  # every later CUDA call would fail the same way
            return


def _serve_forked(tasks: Any, replies: Any, device: str, threads: int, warmup: bool) -> None:
    """A forked worker (``Forked``): the protocol's pipes become its stdin and stdout, as a
    started one has them, then it serves as any worker does."""
    os.dup2(tasks.fileno(), 0)
    os.dup2(replies.fileno(), 1)
    tasks.close()
    replies.close()
    _serve(device, threads, warmup)


def answer(result: RunResult) -> bytes:
    """``result`` as the frame's bytes; one that cannot be serialized is a harness error of its
    task (never the worker's death, which would read as the compiled program's crash)."""
    import io

    import torch

    from fuzzer.execute import failures
    from fuzzer.execute import task as wire

    buf = io.BytesIO()
    try:
        torch.save(result.to_dict(), buf)
    except Exception as err:
        failed = wire.harness_error(f"sending the result: {failures.error_line(err)}")
        lost = wire.RunResult(failed, context_lost=result.context_lost)
        buf = io.BytesIO()
        torch.save(lost.to_dict(), buf)
    return buf.getvalue()


def _context_broken() -> bool:
    """Does this process's CUDA context fail a synchronize with a sticky error (one that no
    verdict caught, surfacing only now)?"""
    import torch

    from fuzzer.execute import failures, faults

    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return False
    try:
        torch.cuda.synchronize()
    except Exception as err:
        return faults.poisons_context(failures.error_line(err))
    return False


def _free_device_memory() -> None:
    """After an out-of-memory skip: drop what the failed case left and return cached blocks."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1")

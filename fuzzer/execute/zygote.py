"""Fresh Python processes without paying torch's imports each time: children forked from a
server that has imported torch, Dynamo and Inductor and done nothing else (the "zygote").

Every repro.py, plain snippet, known repro and worker numfuzz starts is a fresh interpreter, and
on a 2-core machine importing torch, Dynamo and Inductor takes 6 to 9 s of each one's life
(bench/RESULTS.md §28). A child of this server starts with those modules already imported, in
the state a fresh interpreter would have them in: no op has run, no thread pool has started, no
compile has happened, no config was changed. It runs the same code (a script as ``__main__``,
``-m module``, ``-c code``, or a function), in its own session so that a timeout kills what it
started, with its own environment, folder and ``sys.argv``.

What one server cannot give is another value of an environment variable read when torch is
imported or the interpreter starts (``TORCHINDUCTOR_*`` knobs, ``ATEN_CPU_CAPABILITY``,
``OMP_NUM_THREADS``, glibc's malloc checking through ``LD_PRELOAD`` and ``GLIBC_TUNABLES``…):
the server read its own. So there is a server per such environment (``IMPORT_TIME``: a night's
workers run under malloc checking, its environment knob's worker under another capability), up
to ``MAX_SERVERS``, each started with that environment, and a child is forked from the one whose
environment is its own. A script that sets such a variable itself is never forked
(``sets_environment``); it, another interpreter, and environments past ``MAX_SERVERS`` run as a
plain subprocess, exactly as before. A server is Python's own ``multiprocessing`` forkserver,
started on first use (or ahead of it, ``prepare``); it ends once the process that started it
and every command it was handed to have ended.

A command run as a child (``run``: a CLI run in a test, a night's step) is handed its parent's
running servers (``_Handed``): its own children (its workers) fork from them, as its siblings,
instead of from servers it would start afresh, importing torch again in every such command.
Workers, which start no children, are handed none.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import multiprocessing.util  # registers its exit handler before ours: ours runs first
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from multiprocessing import forkserver, resource_tracker
from multiprocessing.process import BaseProcess
from typing import Any, Protocol

PRELOAD = ("torch", "torch._dynamo", "torch._inductor.compile_fx")
# Variables a library may read while it is imported: a child whose value differs is not forked.
IMPORT_TIME = ("TORCH", "PYTORCH", "ATEN_", "TRITON", "CUDA", "NVIDIA", "OMP_", "KMP_", "GOMP_",
               "MKL", "LD_", "GLIBC_", "PYTHON")
# ... except these, which a child applies before anything reads them: the module search path
# (put on ``sys.path``), output buffering, Inductor's and Triton's cache folders (read when a
# compile first needs them, ``cache_dir()``), the breakpoint hook (read by each
# ``breakpoint()``; ``ray.init`` sets it in its driver) and torch's structured trace folder
# (read when torch sets its logs up: the child sets them up again, ``_trace_where_asked``; a
# draft's plain run writes one for tlparse).
TRACE = "TORCH_TRACE"  # torch's structured trace folder (``report.tlparse`` sets it)
APPLIED_IN_CHILD = ("PYTHONPATH", "PYTHONUNBUFFERED", "TORCHINDUCTOR_CACHE_DIR",
                    "TRITON_CACHE_DIR", "PYTHONBREAKPOINT", TRACE)
OFF = "NUMFUZZ_NO_ZYGOTE"  # set (to anything) for plain subprocesses everywhere
_SETS_ENV = re.compile(r"environ\s*\[[^\]]+\]\s*=|environ\.(update|setdefault|pop)\(|putenv\(")

MAX_SERVERS = 3  # servers at once, one per import-time environment (each holds torch: ~350 MB)
Key = tuple[tuple[str, str], ...]


class _Adopted(forkserver.ForkServer):
    """A server this process did not start (its parent's: the one it was forked from, or one
    handed to it) as it asks it for children of its own: running already, so never started
    here, and stopped here only as far as this process keeps it alive."""

    def __init__(self, address: str, alive_fd: int) -> None:
        super().__init__()
        self._forkserver_address = address
        self._forkserver_alive_fd: int | None = alive_fd

    def ensure_running(self) -> None:
        resource_tracker.ensure_running()

    def _stop(self) -> None:
        if self._forkserver_alive_fd is not None:  # no longer kept alive by this process
            os.close(self._forkserver_alive_fd)
            self._forkserver_alive_fd = None


class _Detachable(Protocol):
    """``multiprocessing.reduction.DupFd`` as a child receives it: the descriptor, detached."""

    def detach(self) -> int: ...


class _Handed:
    """A running server as a child receives it: its environment, address and a copy of the
    descriptor that keeps it alive (passed as ``multiprocessing`` passes descriptors)."""

    def __init__(self, env: Mapping[str, str], address: str, alive_fd: int) -> None:
        self.env, self.address, self.alive_fd = dict(env), address, alive_fd

    def __reduce__(self) -> tuple:
        from multiprocessing import context, reduction

        context.assert_spawning(self)  # elsewhere the descriptor would be held by no one
        return _Handed._received, (self.env, self.address, reduction.DupFd(self.alive_fd))

    @staticmethod
    def _received(env: dict[str, str], address: str, alive: _Detachable) -> _Handed:
        return _Handed(env, address, alive.detach())

    @staticmethod
    def running() -> list[_Handed]:
        """This process's servers that run (started, or handed to it); under
        ``_servers_lock``, so that none is stopped before the child has its copy."""
        return [_Handed(server.env, *where) for server in _servers.values()
                if (where := _running_at(server.forkserver)) is not None]


def _running_at(server: forkserver.ForkServer) -> tuple[str, int] | None:
    """A running server's address and this process's descriptor that keeps it alive, or None
    where this process holds none (not started, or let go)."""
    address = getattr(server, "_forkserver_address", None)
    alive_fd = getattr(server, "_forkserver_alive_fd", None)
    return None if address is None or alive_fd is None else (address, alive_fd)


class _Server:
    """One forkserver, started with ``env`` (what it imports torch under) on first use, or
    ``adopted``: a parent's, running already (``_Adopted``)."""

    def __init__(self, env: Mapping[str, str], adopted: _Adopted | None = None) -> None:
        self.env = dict(env)
        self.forkserver = adopted or forkserver.ForkServer()
        self.forkserver.set_forkserver_preload(list(PRELOAD))
        self.started: list[subprocess.Popen[bytes]] = []  # held: never reaped behind its back

    def spawn(self, path: str | bytes, args: Sequence[object], passfds: Sequence[int]
              ) -> int:
        """``multiprocessing.util.spawnv_passfds`` under this server's environment."""
        proc = subprocess.Popen([os.fsdecode(a) if isinstance(a, bytes) else str(a)
                                 for a in args], executable=path, pass_fds=tuple(passfds),
                                env=self.env, close_fds=True)
        self.started.append(proc)
        return proc.pid


_servers: dict[Key, _Server] = {}
_servers_lock = threading.Lock()


def _key(env: Mapping[str, str]) -> Key:
    """What a server must share with a child: the variables read at import or start."""
    return tuple(sorted((k, v) for k, v in env.items()
                        if k.startswith(IMPORT_TIME) and k not in APPLIED_IN_CHILD))


def stop_servers(keep: Collection[Key] = ()) -> None:
    """Stop every server but those of ``keep`` (their memory back), waiting for each to exit:
    a server ends once its last child, and every command it was handed to, has, so call this
    after theirs have ended. One handed to this process is only let go."""
    with _servers_lock:
        for key in [k for k in _servers if k not in keep]:
            server = _servers.pop(key)
            stop: Callable[[], None] = getattr(server.forkserver, "_stop")  # noqa: B009
            stop()  # multiprocessing's own (private) way to stop a server: it reaps it too
            for proc in server.started:  # reaped by the stop: nothing left for Popen to wait on
                if proc.returncode is None:
                    proc.returncode = 0


def forkable(env: dict[str, str] | None, python: str | None = None) -> bool:
    """May a child with environment ``env`` (None: this process's) be forked from a server?
    Only for this interpreter, from a server started with the same import-time variables (one
    is started for it while fewer than ``MAX_SERVERS`` run), and where its structured trace
    folder can be applied (``_can_trace_again``)."""
    if OFF in os.environ or not hasattr(os, "fork") or python not in (None, sys.executable):
        return False
    child: Mapping[str, str] = os.environ if env is None else env
    server = _servers.get(_key(child))
    if server is None and _started_here() >= MAX_SERVERS:
        return False
    started_with = child if server is None else server.env
    return child.get(TRACE) == started_with.get(TRACE) or _can_trace_again()


def _started_here() -> int:
    """Servers this process started (those handed to it hold no memory of its own)."""
    return sum(not isinstance(s.forkserver, _Adopted) for s in _servers.values())


def _can_trace_again() -> bool:
    """Does this torch set its logs up in a function a child can call again (with the handler
    that writes the trace kept in a global it can clear)? Detected, never assumed by version."""
    try:
        from torch._logging import _internal
    except ImportError:
        return False
    return callable(getattr(_internal, "_init_logs", None)) and \
        hasattr(_internal, "LOG_TRACE_HANDLER")


def sets_environment(script: str) -> bool:
    """Does the script's text write an environment variable (perhaps before it imports torch,
    where a forked child would already have read it)?"""
    try:
        with open(script, encoding="utf-8", errors="replace") as f:
            return bool(_SETS_ENV.search(f.read()))
    except OSError:
        return True  # unreadable here: let a real interpreter say so


def run(argv: Sequence[str], timeout: float | None = None, cwd: str | os.PathLike | None = None,
        env: dict[str, str] | None = None, python: str | None = None
        ) -> subprocess.CompletedProcess:
    """``subprocess.run([python, *argv], capture_output=True, text=True, ...)`` in its own
    session, forked from the server where it may be (``forkable``) and otherwise a plain
    subprocess. ``argv``: ``[script, args…]``, ``["-m", module, args…]`` or ``["-c", code,
    args…]``. On a timeout its whole session is killed and ``TimeoutExpired`` raised."""
    argv = [str(a) for a in argv]
    script = argv[0] if argv and not argv[0].startswith("-") else None
    if not forkable(env, python) or (script and sets_environment(
            os.path.join(os.fspath(cwd or "."), script))):
        return _plain([python or sys.executable, *argv], timeout, cwd, env)
    with tempfile.TemporaryDirectory(prefix="numfuzz-zygote-") as folder:
        out, err = os.path.join(folder, "out"), os.path.join(folder, "err")
        child = start(_as_main, (argv,), cwd=cwd, env=env, stdout=out, stderr=err)
        child.join(timeout)
        if child.exitcode is None:
            kill(child)
            raise subprocess.TimeoutExpired([python or sys.executable, *argv], timeout or 0)
        with open(out, errors="replace") as o, open(err, errors="replace") as e:
            return subprocess.CompletedProcess([sys.executable, *argv], child.exitcode,
                                               o.read(), e.read())


def start(target: Callable[..., Any], args: tuple = (), cwd: str | os.PathLike | None = None,
          env: dict[str, str] | None = None, stdout: str | None = None,
          stderr: str | None = None) -> BaseProcess:
    """A forked child (a started ``multiprocessing`` process) running ``target(*args)`` in its
    own session, in ``cwd`` with ``env``, its output to the files ``stdout`` and ``stderr``;
    it exits with ``target``'s exit status (``SystemExit``), 1 with the traceback on stderr
    where it raised, as an interpreter would."""
    env = dict(os.environ if env is None else env)  # the server's may be older than ours
    key = _key(env)
    with _servers_lock:
        server = _servers.get(key)
        if server is None:  # started by its first child, with that child's environment
            server = _servers[key] = _Server(env)
        handed = _Handed.running() if target is _as_main else None  # a command's children
        child = multiprocessing.get_context("forkserver").Process(
            target=_child, args=(target, args, os.fspath(cwd or os.getcwd()), env, stdout,
                                 stderr, handed), daemon=False)
        with _main_hidden(), _through(server):
            child.start()
        _running[:] = [c for c in _running if c.exitcode is None]
        _running.append(child)
    return child


def prepare(env: Mapping[str, str]) -> None:
    """Start the server for ``env`` now, before its first child: one that this process's
    children will fork their own children from (``_Handed``), as a test session does for the
    environment its commands run their workers under."""
    if not forkable(dict(env)):
        return
    key = _key(env)
    with _servers_lock:
        if key in _servers or _started_here() >= MAX_SERVERS:
            return
        server = _servers[key] = _Server(env)
        with _through(server):
            server.forkserver.ensure_running()


_running: list[BaseProcess] = []


@atexit.register
def _kill_the_living() -> None:
    """At exit, ``multiprocessing`` waits for every child it started: a worker still waiting
    for its next task would wait for a parent that waits for it. Kill them first (this runs
    before ``multiprocessing``'s own exit handler, registered earlier)."""
    for child in _running:
        if child.exitcode is None:
            kill(child)


@contextlib.contextmanager
def _through(server: _Server) -> Iterator[None]:
    """``multiprocessing``'s forkserver start method asks one module-level server for each
    child; for the length of one start that is ``server``, and a server started meanwhile gets
    ``server.env``. (Its resource tracker is started first, under this process's environment.)"""
    from multiprocessing import util

    resource_tracker.ensure_running()
    saved = forkserver.connect_to_new_process, util.spawnv_passfds
    forkserver.connect_to_new_process = server.forkserver.connect_to_new_process
    util.spawnv_passfds = server.spawn
    try:
        yield
    finally:
        forkserver.connect_to_new_process, util.spawnv_passfds = saved


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """``multiprocessing`` would have each child import this process's main script or module
    again (where a pickled function might live); nothing sent to a child lives there, and a
    user's script run a second time, inside a child, is never what they asked for."""
    main = sys.modules.get("__main__")
    saved: dict[str, object] = {k: main.__dict__[k] for k in ("__spec__", "__file__")
                                if main and k in main.__dict__}
    if main is not None:
        main.__spec__ = None
        main.__dict__.pop("__file__", None)
    try:
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


def kill(child: BaseProcess) -> None:
    """Kill a child and everything it started (its session), then reap it."""
    if child.pid is not None:  # started
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        child.kill()
    child.join()


def _plain(args: list[str], timeout: float | None, cwd: str | os.PathLike | None,
           env: dict[str, str] | None
           ) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


# ---------------------------------------------------------------- the child side


def _child(target: Callable[..., Any], args: tuple, cwd: str, env: dict[str, str],
           stdout: str | None, stderr: str | None,
           handed: Sequence[_Handed] | None = None) -> None:
    os.setsid()  # a session of its own: a timeout kills the subprocesses it started too
    # (forked ones are sessions of their own; a worker ends when its task pipe closes)
    for fd, path in ((1, stdout), (2, stderr)):
        if path is not None:
            opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
    traced = os.environ.get(TRACE)  # the server's, read when it imported torch
    os.environ.clear()
    os.environ.update(env)
    if handed is not None:
        _adopt(handed, env, traced)
    if os.environ.get(TRACE) != traced:
        _trace_where_asked()
    os.chdir(cwd)
    # As a fresh interpreter builds it: a first entry of its own (``_as_main`` sets the script's
    # folder there), then PYTHONPATH, then the rest. The first entry is a new slot, so that the
    # entry the parent had first (its script's folder, a test run's root) is not overwritten.
    # The rest is the parent's path, as numfuzz's children always had it (``_python_path``).
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = ["", *extra, *(p for p in sys.path if p not in extra)]
    code = 0
    try:
        target(*args)
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        if not isinstance(done.code, int) and done.code is not None:
            print(done.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _adopt(handed: Sequence[_Handed], env: Mapping[str, str], traced: str | None) -> None:
    """A command's own children fork from its parent's servers: first the one it was forked
    from, whose ``TORCH_TRACE`` is ``traced`` (read when it imported torch), then the others
    handed to it. (Unlocked: a child just forked runs one thread.)"""
    origin = _running_at(getattr(forkserver, "_forkserver"))  # noqa: B009 -- set by the server
    if origin is not None:
        own = {k: v for k, v in env.items() if k != TRACE}
        if traced is not None:
            own[TRACE] = traced
        _servers[_key(env)] = _Server(own, _Adopted(*origin))
    for server in handed:
        if _key(server.env) in _servers:  # the one it was forked from: its copy is not needed
            os.close(server.alive_fd)
        else:
            _servers[_key(server.env)] = _Server(server.env,
                                                 _Adopted(server.address, server.alive_fd))


def _trace_where_asked() -> None:
    """Set torch's logs up again from this child's environment, as its import did from the
    server's: the structured trace handler (``TORCH_TRACE``) is made once, so it is dropped
    first. ``forkable`` forks such a child only where this torch has both (``_can_trace_again``)."""
    from torch._logging import _internal

    _internal.LOG_TRACE_HANDLER = None
    _internal._init_logs()


def _as_main(argv: list[str]) -> None:
    """Run ``argv`` as ``python argv…`` would: a script, ``-m module`` or ``-c code``."""
    import runpy

    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        sys.path[0] = ""
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")

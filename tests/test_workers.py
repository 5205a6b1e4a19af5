"""Worker isolation: a segfault, hang or compiler exception costs one case, never the campaign."""

from __future__ import annotations

import os
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from fuzzer.campaign.local import run_campaign
from fuzzer.campaign.loop import Outcome, Summary
from fuzzer.corpus.case import Case
from fuzzer.execute.recipe import Recipe
from fuzzer.execute.task import Task
from fuzzer.execute.workers import LocalRunner, Worker, chatter
from fuzzer.gen import inputs
from fuzzer.gen.grammar import Builder
from fuzzer.judge.verdict import Verdict
from tests.conftest import campaign_settings, ledger_of


def small_task(backend: str) -> Task:
    b = Builder(random.Random(0), "float32")
    x = b.input((3, 5))
    b.graph.outputs = [b.op("quant_uint8", b.op("tanh", x), scale=0.05, zero_point=128)]
    _, draw = inputs.draws(b.graph, 0, 1)[0]
    return Task(graph=b.graph, draws=[draw], magnitudes=["normal"], recipe=Recipe(backend))


def verdict_of(runner: LocalRunner, backend: str) -> Verdict:
    return runner.run(small_task(backend)).verdict


def worker_pid(runner: LocalRunner) -> int:
    assert runner.worker is not None
    return runner.worker.proc.pid


def test_segfault_is_memory_unsafe_and_a_fresh_worker_continues(fake_runner: LocalRunner) -> None:
    assert verdict_of(fake_runner, "eager").kind == "ok"
    before = fake_runner.worker
    verdict = verdict_of(fake_runner, "tests.fakes:segfault")
    assert verdict.kind == "memory-unsafe" and verdict.is_finding
    assert "SIGSEGV" in verdict.message
    assert before.proc.poll() is not None  # the old worker is gone, reaped ...
    assert fake_runner.worker is None
    assert verdict_of(fake_runner, "eager").kind == "ok"  # ... and a new one took over
    assert fake_runner.worker is not before


def test_hang_is_a_timeout_and_a_fresh_worker_continues(fake_runner: LocalRunner) -> None:
    assert verdict_of(fake_runner, "eager").kind == "ok"  # start (and warm) the worker first
    before = fake_runner.worker
    saved, fake_runner.timeout = fake_runner.timeout, 3
    try:
        verdict = verdict_of(fake_runner, "tests.fakes:hang")
    finally:
        fake_runner.timeout = saved
    assert verdict.kind == "timeout" and verdict.is_finding
    assert "timeout" in verdict.message
    assert before.proc.poll() is not None  # killed, not left sleeping
    assert verdict_of(fake_runner, "eager").kind == "ok"
    assert fake_runner.worker is not before


def test_compiler_exception_is_a_crash_and_the_worker_survives(fake_runner: LocalRunner) -> None:
    assert verdict_of(fake_runner, "eager").kind == "ok"
    pid = worker_pid(fake_runner)
    verdict = verdict_of(fake_runner, "tests.fakes:raises")
    assert verdict.kind == "crash"
    assert "planted compiler failure" in verdict.message
    # An exception is contained inside the worker: no restart needed.
    assert worker_pid(fake_runner) == pid
    assert verdict_of(fake_runner, "eager").kind == "ok"


def test_unknown_backend_is_a_harness_error_not_a_lost_worker(fake_runner: LocalRunner) -> None:
    assert verdict_of(fake_runner, "eager").kind == "ok"
    pid = worker_pid(fake_runner)
    verdict = verdict_of(fake_runner, "no_such_backend")
    assert verdict.kind == "skip" and "harness error" in verdict.message
    assert worker_pid(fake_runner) == pid


def _campaign(out: Path, backend: str, cases: int, timeout: float = 60) -> Summary:
    settings = campaign_settings(out=out, cases=cases, seed=3, backend=backend, draws=1,
                                 timeout=timeout, dtypes=("float32",))
    seen: list[Outcome] = []
    summary = run_campaign(settings, on_outcome=seen.append)
    assert sorted(o.index for o in seen) == list(range(cases))
    return summary


@pytest.mark.parametrize("backend,kind,timeout", [
    ("tests.fakes:segfault", "memory-unsafe", 60),
    ("tests.fakes:hang", "timeout", 3),
])
def test_campaign_finishes_and_records_lost_workers(tmp_path: Path, backend: str, kind: str,
                                                   timeout: float) -> None:
    cases = 2
    summary = _campaign(tmp_path, backend, cases, timeout)
    assert summary.cases == cases
    assert summary.findings == {kind: cases}
    files = sorted(tmp_path.glob("*.pt"))
    assert len(files) == cases and [str(p) for p in files] == sorted(summary.paths)
    for path in files:
        case = Case.load(path)
        assert case.verdict.kind == kind and case.verdict.message
        assert case.recipe.backend == backend
        assert case.origin["index"] in range(cases)
    state = ledger_of(tmp_path)
    assert state["below"] == cases


def test_a_worker_that_cannot_start_leaves_no_log_or_cache_behind(monkeypatch):
    """Out of processes or descriptors: Popen raises, and the worker's log file and private
    Inductor cache, made before it, are removed (a night would otherwise collect them)."""
    import os
    import subprocess
    import tempfile

    from fuzzer.execute import workers

    def mine() -> set[str]:
        prefix = f"{workers.TEMP_PREFIX}{os.getpid()}-"
        return {p.name for p in Path(tempfile.gettempdir()).glob(f"{prefix}*")}

    def no_more_processes(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    before = mine()
    monkeypatch.setattr(subprocess, "Popen", no_more_processes)
    monkeypatch.setattr(workers.zygote, "start", no_more_processes)  # nor a forked one
    for env in (None, {"TORCHINDUCTOR_FREEZING": "1"}):  # forked, and started afresh
        with pytest.raises(OSError, match="Resource temporarily unavailable"):
            workers.Worker("cpu", warmup=False, private_cache=True, env=env)
        assert mine() == before


def test_an_answer_that_cannot_be_sent_is_a_harness_error_of_its_case() -> None:
    """A result torch.save refuses (here an object it cannot pickle) is sent as a harness error
    of that case, not raised: the worker's death would read as the compiled program's crash."""
    import io

    import torch

    from fuzzer.campaign.harness import is_harness_error
    from fuzzer.execute.task import RunResult
    from fuzzer.execute.workers import answer

    result = RunResult(Verdict("ok"), outputs={"eager": [lambda: None]})
    sent = RunResult.from_dict(torch.load(io.BytesIO(answer(result)), weights_only=True))
    assert is_harness_error(sent.verdict) and "sending the result" in sent.verdict.message


# ---------------------------------------------------------------- forked from the zygote


FRESH = ("import sys\n"
         "print('torch already imported:', 'torch' in sys.modules, sys.argv[1:])\n"
         "import torch\n"
         "raise SystemExit(int(torch.ones(3).sum()))\n")


def test_a_forked_child_is_run_as_a_fresh_interpreter_runs_it(tmp_path: Path) -> None:
    """``zygote.run`` gives what ``subprocess.run([python, …])`` gives: the exit status,
    ``sys.argv``, the folder, the environment, a traceback and status 1 for a raise; a script
    that sets an environment variable itself gets a real fresh interpreter (torch not yet
    imported when it starts), and a timeout kills the child's whole session."""
    import subprocess

    from fuzzer.execute import zygote

    script = tmp_path / "script.py"
    script.write_text(FRESH)
    done = zygote.run([script.name, "a"], cwd=tmp_path, timeout=120,
                      env={**os.environ, "NUMFUZZ_SEEN": "x"})
    assert done.returncode == 3 and "already imported: True ['a']" in done.stdout, done.stderr
    module = zygote.run(["-c", "import os, sys; print(os.getcwd(), os.environ['NUMFUZZ_SEEN'], "
                         "sys.argv[1:])", "b"], cwd=tmp_path, timeout=60,
                        env={**os.environ, "NUMFUZZ_SEEN": "y"})
    assert module.stdout.split() == [str(tmp_path), "y", "['b']"], module.stderr
    raised = zygote.run(["-c", "raise ValueError('planted')"], timeout=60)
    assert raised.returncode == 1 and "Traceback (most recent call last)" in raised.stderr
    assert raised.stderr.strip().endswith("ValueError: planted")
    setter = tmp_path / "setter.py"
    setter.write_text("import os\nos.environ['TORCHINDUCTOR_FREEZING'] = '1'\n" + FRESH)
    fresh = zygote.run([setter.name], cwd=tmp_path, timeout=120)
    assert fresh.returncode == 3 and "already imported: False" in fresh.stdout, fresh.stderr
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text("import subprocess, sys, time\n"
                       "print(subprocess.Popen([sys.executable, '-c', 'import time; "
                       "time.sleep(60)']).pid, flush=True)\ntime.sleep(60)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        zygote.run([sleeper.name], cwd=tmp_path, timeout=5)


@pytest.fixture
def own_servers(monkeypatch: pytest.MonkeyPatch):
    """Room for two more zygote servers, whatever this process's earlier tests started; the
    test's own are stopped after it (each holds torch)."""
    from fuzzer.execute import zygote

    before = set(zygote._servers)
    monkeypatch.setattr(zygote, "MAX_SERVERS", len(before) + 2)
    yield
    zygote.stop_servers(keep=before)


@pytest.mark.parametrize("variable, value", [
    ("NUMFUZZ_ANYTHING", "1"),  # read by numfuzz when it needs it
    ("PYTHONPATH", "/elsewhere"),  # put on sys.path by the child
    ("TORCHINDUCTOR_CACHE_DIR", "/tmp/x"),  # read by Inductor at its first compile
    # read when breakpoint() is called; ray.init sets it in the driver, which made every later
    # worker of a Ray test's pytest process start afresh
    ("PYTHONBREAKPOINT", "ray.util.rpdb._driver_set_trace"),
    ("TORCH_TRACE", "/tmp/numfuzz-trace"),  # torch's logs are set up again in the child
    ("TORCHINDUCTOR_FREEZING", "1"),  # read when Inductor's config is imported: its own server
])
def test_a_worker_is_forked_whatever_its_environment_while_servers_are_few(
        own_servers: None, variable: str, value: str) -> None:
    from fuzzer.execute import zygote
    from fuzzer.execute.workers import Forked, Worker

    assert zygote.forkable({**os.environ, variable: value})
    worker = Worker("cpu", warmup=False, env={variable: value})
    try:
        worker.wait_ready(120)
        assert isinstance(worker.proc, Forked)
        reply = worker.run(b"", 60)  # an empty task: a harness error, answered
        assert reply
    finally:
        worker.close()
    assert worker.proc.poll() is not None


SEES = ("import sys\n"
        "print('torch' in sys.modules)\n"  # forked: imported already; afresh: not yet
        "import os, torch, torch._inductor.config as c\n"
        "maps = open('/proc/self/maps').read()\n"
        "print(c.freezing, torch.backends.cpu.get_cpu_capability(), "
        "'libc_malloc_debug' in maps)\n")


def test_a_forked_child_sees_what_its_environment_gave_a_fresh_interpreter(
        own_servers: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What is read when torch is imported or the interpreter starts (an Inductor knob, ATen's
    CPU capability, glibc's malloc checking) is the child's own, as in a fresh interpreter: it
    is forked from a server started with that environment. Past ``MAX_SERVERS`` a new
    environment gets a fresh interpreter."""
    import subprocess
    import sys

    from fuzzer.execute import memcheck, zygote

    script = tmp_path / "sees.py"
    script.write_text(SEES)
    checked = memcheck.environment() if memcheck.library() else {}
    for extra in ({}, {"TORCHINDUCTOR_FREEZING": "1", "ATEN_CPU_CAPABILITY": "default",
                       **checked}):
        env = {**os.environ, **extra}
        assert zygote.forkable(env)
        forked = zygote.run([script.name], cwd=tmp_path, timeout=120, env=env)
        fresh = subprocess.run([sys.executable, script.name], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=120)
        assert forked.returncode == fresh.returncode == 0, forked.stderr + fresh.stderr
        assert forked.stdout.split()[0] == "True" and fresh.stdout.split()[0] == "False"
        assert forked.stdout.split()[1:] == fresh.stdout.split()[1:], (extra, forked.stdout)
    assert fresh.stdout.split()[1:] == ["True", "DEFAULT", str(bool(checked))]  # they were read
    monkeypatch.setattr(zygote, "MAX_SERVERS", len(zygote._servers))
    assert not zygote.forkable({**os.environ, "OMP_NUM_THREADS": "7"})


# A command run as a child: it starts children of its own, plain and under malloc checking.
STARTS_CHILDREN = ("import os\n"
                   "from fuzzer.execute import memcheck, zygote\n"
                   "envs = [os.environ, {**os.environ, **memcheck.environment()}\n"
                   "        if memcheck.library() else os.environ]\n"
                   "handed = [isinstance(getattr(zygote._servers.get(zygote._key(e)),\n"
                   "                             'forkserver', None), zygote._Adopted)\n"
                   "          for e in envs]\n"
                   "for env in envs:\n"
                   "    out = zygote.run(['sees.py'], timeout=120, env=dict(env))\n"
                   "    print(out.returncode, *out.stdout.split(), repr(out.stderr[-300:]))\n"
                   "print(all(handed), sum(len(s.started) for s in zygote._servers.values()))\n")


def test_a_forked_childs_children_fork_from_the_servers_it_was_handed(
        own_servers: None, tmp_path: Path) -> None:
    """A command run as a child (a CLI run in a test, a night's) starts its own children from
    its parent's servers, as their siblings: the one it was forked from and one prepared for
    another environment (malloc checking), not servers of its own that import torch again
    (6 to 9 s each). Each grandchild sees its environment as a fresh interpreter would."""
    from fuzzer.execute import memcheck, zygote

    (tmp_path / "sees.py").write_text(SEES)
    (tmp_path / "child.py").write_text(STARTS_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    checked = memcheck.environment(env) if memcheck.library() else {}
    if checked:
        zygote.prepare({**env, **checked})
    done = zygote.run(["child.py"], cwd=tmp_path, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    *grandchildren, last = done.stdout.splitlines()
    # both environments' servers were handed to it, and it started none of its own
    assert last.split() == ["True", "0"], done.stdout
    for line, under in zip(grandchildren, (False, bool(checked))):
        # exit 0, forked (torch imported already), and malloc checking exactly where asked
        assert line.split()[:3] == ["0", "True", "False"], line
        assert line.split()[4] == str(under), line


def test_a_dead_workers_message_is_its_last_line_that_is_not_torch_or_python_chatter(
        tmp_path: Path) -> None:
    """A night's SIGSEGV was summarized by torch's 'No CUDA runtime is found' warning, the last
    line its worker's log happened to hold; glibc's message, or the last real line, says more."""
    log = tmp_path / "worker.log"
    log.write_text("corrupted size vs. prev_size\n"
                   "W1129 09:05:18.099000 13661 torch/utils/cpp_extension.py:183] [0/0] No CUDA "
                   "runtime is found, using CUDA_HOME='/usr/local'\n"
                   "/x.py:3: UserWarning: something\n"
                   "  warn_once(\n"  # the source line a warning quotes (a night's SIGSEGV)
                   "I1129 09:05:19.5 13661 torch/_inductor/graph.py:3137] Output code written\n\n")
    assert Worker.log_tail(SimpleNamespace(log=log)) == "corrupted size vs. prev_size"
    assert not chatter("E1129 09:05:18.099000 13661 c10/core/x.cpp:12] an error torch logged")

"""``numfuzz --malloc-check``: a compiled kernel that writes past its buffer is a memory-unsafe
finding under glibc's malloc checking and passes unnoticed without it (planted by a fake backend
that writes one byte past a buffer), the case remembers it, replay follows it, repro.py says how to
run it; a machine without the library is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fuzzer.campaign import fleet
from fuzzer.cli import main
from fuzzer.corpus.case import Case
from fuzzer.errors import InputError
from fuzzer.execute import memcheck
from fuzzer.reduce.repro import write_repro
from fuzzer.report import draft
from tests.conftest import campaign_settings, run_repro
from tests.test_cli_run import numfuzz

needs_glibc = pytest.mark.skipif(memcheck.library() is None,
                                 reason=f"no {memcheck.LIBRARY} on this machine")
RUN = ["run", "--device", "cpu", "--cases", "2", "--seed", "9", "--dtype", "fp32", "--draws",
       "1", "--backend", "tests.fakes:one_byte_past_the_end", "--json", "--surface", "default"]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("checked") / "corpus"
    proc = numfuzz("--malloc-check", *RUN, "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return out, json.loads(proc.stdout)


@needs_glibc
def test_a_write_past_a_buffer_is_memory_unsafe_under_malloc_check_and_nothing_without(
        checked, tmp_path: Path) -> None:
    out, summary = checked
    assert summary["findings"] == {"memory-unsafe": 2}, summary
    for path in sorted(out.glob("*.pt")):
        case = Case.load(path)
        assert "free(): invalid pointer" in case.verdict.message, case.verdict.message
        assert case.origin[memcheck.ORIGIN_KEY] is True
    plain = numfuzz(*RUN, "--no-malloc-check", "--out", str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert json.loads(plain.stdout)["findings"] == {}
    assert not list((tmp_path / "plain").glob("*.pt"))


@needs_glibc
def test_replay_and_repro_of_a_case_found_under_checking_run_under_it(checked,
                                                                      tmp_path: Path) -> None:
    out, _ = checked
    found = sorted(out.glob("*.pt"))[0]
    replayed = numfuzz("replay", str(found), "--json")  # no flag: the case says so
    assert "found under glibc's malloc checking, or is memory-unsafe: running its workers " \
        "under it too" in replayed.stderr
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout)["verdict"]["kind"] == "memory-unsafe"
    case = Case.load(found)
    repro = write_repro(case, tmp_path)
    header = repro.read_text().split('"""')[1]
    assert "runs itself again under glibc's malloc checking" in header
    assert f"`{memcheck.shell_prefix()} python snippet.py`" in draft.malloc_checking(case)
    done = run_repro(repro)  # no flag, no environment: the repro checks itself, in a child
    assert done.returncode == 1 and "died of SIGABRT: DIVERGES" in done.stdout, \
        done.stdout + done.stderr
    del case.origin[memcheck.ORIGIN_KEY]  # memory-unsafe: checked whatever its origin says
    assert memcheck.shell_prefix() in draft.malloc_checking(case)


@needs_glibc
def test_the_environment_adds_to_what_is_set_and_active_reads_it() -> None:
    env = memcheck.environment({"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0",
                                "LD_PRELOAD": "/opt/other.so"})
    assert env["GLIBC_TUNABLES"] == f"glibc.malloc.tcache_count=0:{memcheck.TUNABLE}"
    assert env["LD_PRELOAD"] == f"/opt/other.so {memcheck.library()}"
    assert memcheck.active(env) and not memcheck.active({"LD_PRELOAD": env["LD_PRELOAD"]})
    assert memcheck.environment(env) == env  # once is enough


def test_no_library_is_one_line_and_exit_2(monkeypatch) -> None:
    monkeypatch.setattr(memcheck, "library", lambda: None)
    result = CliRunner().invoke(main, ["--malloc-check", "run", "--cases", "1"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"numfuzz: error: --malloc-check needs glibc's {memcheck.LIBRARY} (glibc 2.34 or "
        "later) beside this process's libc; it is not there"]


def test_the_ray_engine_refuses_malloc_check(monkeypatch) -> None:
    monkeypatch.setattr(memcheck, "active", lambda env=None: True)
    with pytest.raises(InputError, match="local workers only"):
        fleet.Fleet(campaign_settings(out=Path("unused")), slots=1)

"""Fresh processes started afresh against forked from the zygote, side by side in one run.

    python bench/zygote_starts.py [ROUNDS]

Each round, in alternating order: a warm CPU worker (imports, one warm-up compile) until it
says it is ready, the same under glibc's malloc checking (a night's CPU workers: forked from a
server of its own, started under that environment), a fake-backend worker (no warm-up), and a
script that compiles one small function and prints its result (what a repro.py does), each once
started afresh (``NUMFUZZ_NO_ZYGOTE=1``) and once forked from the zygote. The zygote's own start
(its imports, paid once per driver process and environment) is measured apart, first, for both
environments. Prints one JSON line per measurement and the medians; bench/RESULTS.md §28 and
§38 record runs.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzzer.execute import memcheck, zygote  # noqa: E402
from fuzzer.execute.workers import Worker  # noqa: E402

SCRIPT = ("import torch\n"
          "import torch._inductor.config as config\n"
          "config.force_disable_caches = True\n"
          "f = torch.compile(lambda x: torch.sin(x) * 2 + 1, fullgraph=True)\n"
          "print(f(torch.ones(5)).sum().item())\n")


def worker(warmup: bool, checked: bool = False) -> float:
    start = time.monotonic()
    w = Worker("cpu", threads=1, warmup=warmup,
               env=memcheck.environment() if checked else None)
    try:
        w.wait_ready(600)
    finally:
        w.close()
    return time.monotonic() - start


def script(path: Path) -> float:
    start = time.monotonic()
    done = zygote.run([str(path)], timeout=600)
    assert done.returncode == 0 and abs(float(done.stdout) - 13.4147) < 1e-3, done.stderr
    return time.monotonic() - start


def measure(label: str, afresh: bool, fn, *args) -> float:
    if afresh:
        os.environ[zygote.OFF] = "1"
    else:
        os.environ.pop(zygote.OFF, None)
    seconds = fn(*args)
    print(json.dumps({"what": label, "afresh": afresh, "seconds": round(seconds, 2)}),
          flush=True)
    return seconds


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    path = Path(tempfile.mkdtemp()) / "compile_one.py"
    path.write_text(SCRIPT)
    first = measure("zygote start + fake worker", False, worker, False)
    checked_first = measure("checked zygote start + fake worker", False, worker, False, True)
    times: dict[tuple[str, bool], list[float]] = {}
    for r in range(rounds):
        order = (True, False) if r % 2 == 0 else (False, True)
        for label, fn, args in (("warm worker", worker, (True,)),
                                ("checked warm worker", worker, (True, True)),
                                ("fake worker", worker, (False,)),
                                ("compile script", script, (path,))):
            for afresh in order:
                times.setdefault((label, afresh), []).append(measure(label, afresh, fn, *args))
    print(json.dumps({"zygote start + first fake worker": round(first, 2),
                      "checked zygote start + first fake worker": round(checked_first, 2)}))
    for (label, afresh), values in sorted(times.items()):
        print(f"{label:15s} {'afresh' if afresh else 'forked'}: median "
              f"{statistics.median(values):6.2f} s of {len(values)}")


if __name__ == "__main__":
    main()

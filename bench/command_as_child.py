"""A numfuzz command run as a forked child (as the suite's ``python()`` runs one, as a night runs
its steps), its workers forked from the servers its parent hands it against from servers of its
own, side by side in one run.

    python bench/command_as_child.py [ROUNDS]

Each round, in alternating order: ``numfuzz run`` of three cases with a planted fake backend
(its CPU workers under glibc's malloc checking, the default), run with ``zygote.run`` by a
parent that has a server for that environment (``zygote.prepare``), once with the parent's
servers handed to it and once with none handed (``_Handed.running`` patched to hand nothing:
the command starts a server of its own for its workers, as every such command did before).
Wall seconds and the machine's CPU seconds (``/proc/stat``: the command, its servers and
workers) per command; prints one JSON line per measurement and the medians. bench/RESULTS.md
§39 records a run.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzzer.execute import memcheck, zygote  # noqa: E402

BACKEND = "tests.fakes:uint8_plus_one"


def cpu_seconds() -> float:
    """The machine's busy CPU seconds so far (user, nice, system, irq, softirq)."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()[1:8]
    return (sum(map(int, fields)) - int(fields[3]) - int(fields[4])) / os.sysconf("SC_CLK_TCK")


def command(out: Path, env: dict[str, str]) -> tuple[float, float]:
    argv = ["-m", "fuzzer", "--trust-backend", BACKEND, "run", "--device", "cpu", "--cases",
            "3", "--seed", "1", "--backend", BACKEND, "--out", str(out), "--json"]
    wall, cpu = time.monotonic(), cpu_seconds()
    done = zygote.run(argv, timeout=600, cwd=ROOT, env=env)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return time.monotonic() - wall, cpu_seconds() - cpu


def main(rounds: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMFUZZ_WORKERS": "1"}
    if memcheck.library() is None:
        sys.exit("command_as_child.py: needs glibc's malloc checking (the default CPU workers)")
    zygote.prepare({**env, **memcheck.environment(env)})
    zygote.run(["-c", "pass"], env=env)  # the parent's plain server, started before timing
    handing = zygote._Handed.running
    results: dict[str, list[tuple[float, float]]] = {"handed": [], "none handed": []}
    with tempfile.TemporaryDirectory() as folder:
        for index in range(rounds):
            order = ["handed", "none handed"] if index % 2 == 0 else ["none handed", "handed"]
            for label in order:
                zygote._Handed.running = handing if label == "handed" else staticmethod(list)
                try:
                    wall, cpu = command(Path(folder) / f"{label}-{index}", env)
                finally:
                    zygote._Handed.running = handing
                results[label].append((wall, cpu))
                print(json.dumps({"round": index, "servers": label, "wall_s": round(wall, 2),
                                  "cpu_s": round(cpu, 2)}), flush=True)
    for label, runs in results.items():
        print(f"{label}: median wall {statistics.median(w for w, _ in runs):.2f} s, "
              f"median CPU {statistics.median(c for _, c in runs):.2f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)

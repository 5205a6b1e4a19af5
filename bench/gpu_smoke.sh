#!/usr/bin/env bash
# A first GPU run in one call, from the checkout (no install, no network):
#   bench/gpu_smoke.sh OUTDIR [--device cuda|cpu] [--campaign 2m|CASES] [--workers "1 2 4"]
#       [--minimize 3m] [--seeds "fma_exp_cancel softmax_recompute conv_gelu_e8m0"]
#       [--deadline SECONDS] [--backend NAME] [--bisect] [--tests FILE|none] [--fetch DIR]
#       [--surface NAME ...]
# Steps: the environment (torch, GPU, torch.backends flags, the SDPA priority, which triage knobs
# this torch has, collect_env); the cuda-marked tests (--tests, default tests/test_cuda.py); one
# campaign per worker count (--workers "" for none), all sharing GPU 0 (cases/min each); each seed
# model file (tests/models/; --seeds "" for none) replayed, minimized and, when its minimized case
# reproduces, triaged with every knob; the first campaign finding triaged and minimized. OUTDIR/summary.json gathers it all; OUTDIR.tar.gz holds OUTDIR
# (logs, corpora, minimized cases and their repro.py). The campaigns split their time over every
# surface this GPU runs (CUDA graphs, Triton templates, strict numerics, batch invariance …) unless
# --surface names some (repeatable).
# --deadline: a budget for the whole run in seconds: each step is cut at it (SIGINT: numfuzz keeps
# what it found) and later steps are skipped, so the summary and the archive are always written.
# The device tool stops a command at 10 minutes and returns at most 8 files: give it shorter
# budgets and --deadline 540, and --fetch "$OUT" to copy just the archive and summary.json there.
# --device cpu with tiny budgets and a fake --backend is the dry run tests/test_gpu_smoke.py does.
set -u
usage() { sed -n 2,6p "$0" >&2; exit 2; }
OUT="" DEVICE=cuda CAMPAIGN=2m WORKERS="1 2 4" MINIMIZE=3m DEADLINE=0 BACKEND=inductor BISECT=0
SEEDS="fma_exp_cancel softmax_recompute conv_gelu_e8m0" FETCH="" TESTS=tests/test_cuda.py
SURFACES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --device) DEVICE=$2; shift 2 ;;
    --campaign) CAMPAIGN=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --minimize) MINIMIZE=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --deadline) DEADLINE=$2; shift 2 ;;
    --backend) BACKEND=$2; shift 2 ;;
    --bisect) BISECT=1; shift ;;
    --tests) TESTS=$2; shift 2 ;;
    --fetch) FETCH=$2; shift 2 ;;
    --surface) SURFACES+=(--surface "$2"); shift 2 ;;
    -h|--help|-*) usage ;;
    *) [ -z "$OUT" ] || usage; OUT=$1; shift ;;
  esac
done
[ -n "$OUT" ] || usage
PY=${PYTHON:-python}
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
RESERVE=20  # seconds kept for the summary and the archive
: > "$OUT/steps.tsv"
NUMFUZZ=("$PY" -m fuzzer)
case "$BACKEND" in *:*) NUMFUZZ+=(--trust-backend "$BACKEND") ;; esac
GPUS=(); [ "$DEVICE" = cuda ] && GPUS=(--gpus 0)
NO_BISECT=(--no-bisect); [ "$BISECT" = 1 ] && NO_BISECT=()
# --campaign: a duration (2m), or a plain number of cases (what a dry run on a loaded CPU needs)
BUDGET=(--time "$CAMPAIGN"); case "$CAMPAIGN" in *[!0-9]*) ;; *) BUDGET=(--cases "$CAMPAIGN") ;; esac

# step NAME STDOUT CMD...: CMD with stdout to STDOUT and stderr to NAME.log, cut at the deadline;
# its exit status and seconds go to steps.tsv ("skipped" once the deadline has passed).
step() {
  local name=$1 stdout=$2 left=0 began rc
  shift 2
  if [ "$DEADLINE" -gt 0 ]; then
    left=$(( DEADLINE - RESERVE - ($(date +%s) - START) ))
    if [ "$left" -le 5 ]; then
      printf '%s\tskipped\t0\n' "$name" >> "$OUT/steps.tsv"
      echo "$(date +%H:%M:%S) $name: skipped (deadline)" | tee -a "$OUT/steps.log"
      return 124
    fi
  fi
  echo "$(date +%H:%M:%S) $name" | tee -a "$OUT/steps.log"
  began=$(date +%s)
  if [ "$left" -gt 0 ]; then
    timeout -s INT --kill-after=20 "$left" "$@" > "$stdout" 2> "$OUT/$name.log"; rc=$?
  else
    "$@" > "$stdout" 2> "$OUT/$name.log"; rc=$?
  fi
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - began ))" >> "$OUT/steps.tsv"
  return $rc
}

step environment "$OUT/env.json" "$PY" - "$DEVICE" <<'PYEOF'
import json, sys
import torch
from fuzzer.execute import config
from fuzzer.execute.flags import Flags
from fuzzer.triage.attribute import KNOBS
device = sys.argv[1]
cuda = device == "cuda" and torch.cuda.is_available()
try:
    import triton
    triton_version = triton.__version__
except ImportError:
    triton_version = None
print(json.dumps({
    "torch": torch.__version__, "cuda": torch.version.cuda, "triton": triton_version,
    "device": device,
    "gpu": torch.cuda.get_device_name(0) if cuda else None,
    "capability": list(torch.cuda.get_device_capability(0)) if cuda else None,
    "gpus": torch.cuda.device_count() if cuda else 0,
    "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    "flags": Flags.current().to_dict(),
    "sdpa_priority": [int(b) for b in torch._C._get_sdp_priority_order()]
    if hasattr(torch._C, "_get_sdp_priority_order") else None,
    "knobs_not_in_this_torch": sorted(k.name for k in KNOBS if config.missing(k.config)),
}, indent=1))
PYEOF
step collect_env "$OUT/collect_env.txt" "$PY" -m torch.utils.collect_env

if [ "$TESTS" != none ]; then
  step cuda_tests "$OUT/cuda_tests.txt" "$PY" -m pytest -q -rs -m cuda "$TESTS" -p no:cacheprovider
fi

for workers in $WORKERS; do
  step "campaign-w$workers" "$OUT/run-w$workers.json" "${NUMFUZZ[@]}" run --device "$DEVICE" \
    ${GPUS[@]+"${GPUS[@]}"} --workers "$workers" "${BUDGET[@]}" --seed "$workers" --backend "$BACKEND" \
    ${SURFACES[@]+"${SURFACES[@]}"} --out "$OUT/corpus-w$workers" --json
done

for seed in $SEEDS; do
  step "replay-$seed" "$OUT/replay-$seed.json" "${NUMFUZZ[@]}" replay "tests/models/$seed.py" \
    --device "$DEVICE" --json
  step "minimize-$seed" "$OUT/min-$seed.json" "${NUMFUZZ[@]}" minimize "tests/models/$seed.py" \
    -o "$OUT/min-$seed" --time "$MINIMIZE" --corpus "$OUT/slips" --json
  if [ -f "$OUT/min-$seed/case.pt" ]; then
    step "triage-$seed" "$OUT/triage-$seed.json" "${NUMFUZZ[@]}" triage "$OUT/min-$seed/case.pt" \
      ${NO_BISECT[@]+"${NO_BISECT[@]}"} --json
  fi
done

first=$(ls "$OUT"/corpus-w*/*.pt 2>/dev/null | head -n 1)
if [ -n "$first" ]; then
  step triage-first "$OUT/triage-first.json" "${NUMFUZZ[@]}" triage "$first" ${NO_BISECT[@]+"${NO_BISECT[@]}"} \
    --json
  step minimize-first "$OUT/min-first.json" "${NUMFUZZ[@]}" minimize "$first" \
    -o "$OUT/min-first" --time "$MINIMIZE" --corpus "$OUT/slips" --json
fi

echo "$(date +%H:%M:%S) summary" | tee -a "$OUT/steps.log"
"$PY" - "$OUT" "$WORKERS" "$SEEDS" > "$OUT/summary.json" 2> "$OUT/summary.log" <<'PYEOF'
import json, sys
from pathlib import Path
out, workers, seeds = Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split()

def read(name):
    path = out / name
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError as err:
        return {"unreadable": f"{name}: {err}", "stderr": tail(name.rsplit(".", 1)[0])}

def tail(stem, lines=5):
    for log in (out / f"{stem}.log", out / f"{stem}.txt"):
        if log.exists():
            return log.read_text(errors="replace").strip().splitlines()[-lines:]
    return []

def campaign(w):
    run = read(f"run-w{w}.json")
    if not isinstance(run, dict) or "cases" not in run:
        return {"result": run, "stderr": tail(f"campaign-w{w}")}
    keep = ("cases", "cases_per_min", "elapsed_s", "findings", "not_findings", "skipped",
            "out_of_memory", "harness_errors", "harness_messages", "stopped", "hints")
    return {k: run.get(k) for k in keep}

steps = [dict(zip(("step", "rc", "seconds"), ln.split("\t")))
         for ln in (out / "steps.tsv").read_text().splitlines() if ln]
tests = (out / "cuda_tests.txt")
summary = {
    "env": read("env.json"),
    "steps": steps,
    "cuda_tests": tests.read_text().strip().splitlines()[-12:] if tests.exists() else None,
    "campaigns": {w: campaign(w) for w in workers},
    "seeds": {s: {"replay": read(f"replay-{s}.json"), "minimize": read(f"min-{s}.json"),
                  "triage": read(f"triage-{s}.json"),
                  "stderr": tail(f"minimize-{s}", 3)} for s in seeds},
    "first_finding": {"triage": read("triage-first.json"), "minimize": read("min-first.json")},
    "repros": sorted(str(p.relative_to(out)) for p in out.glob("min-*/repro.py")),
}
print(json.dumps(summary, indent=1))
PYEOF
tar -czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
if [ -n "$FETCH" ]; then
  mkdir -p "$FETCH" && cp "$OUT.tar.gz" "$OUT/summary.json" "$FETCH/"
fi
echo "$(date +%H:%M:%S) done: $OUT/summary.json, $OUT.tar.gz" | tee -a "$OUT/steps.log"

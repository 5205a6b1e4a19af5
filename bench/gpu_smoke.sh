#!/usr/bin/env bash
# Everything a GPU run needs, in one call, from the checkout (no install, no network):
#   bench/gpu_smoke.sh OUTDIR [CAMPAIGN_TIME] [MINIMIZE_TIME]   (durations as numfuzz reads them: 40s, 2m)
# 1. the cuda-marked tests; 2. campaigns of CAMPAIGN_TIME (default 2m) with 1, 2 and 4 workers sharing
# GPU 0 (cases/min per worker count); 3. replay and minimize of the seed-shaped model files;
# 4. triage of the first finding with every knob (the Triton ones included); then
# OUTDIR/summary.json gathers it all, and OUTDIR holds every log, corpus and repro.
set -u
OUT=${1:?usage: bench/gpu_smoke.sh OUTDIR [CAMPAIGN_TIME] [MINIMIZE_TIME]}
CAMPAIGN_TIME=${2:-2m}
MINIMIZE_TIME=${3:-3m}
PY=${PYTHON:-python}
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$OUT"
step() { echo "$(date +%H:%M:%S) $*" | tee -a "$OUT/steps.log"; }

step "environment"
$PY -c "import torch, json; print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, 'gpu': torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}))" > "$OUT/env.json" 2>&1
$PY -m torch.utils.collect_env > "$OUT/collect_env.txt" 2>&1

step "cuda tests"
$PY -m pytest -q -m cuda tests -p no:cacheprovider > "$OUT/cuda_tests.log" 2>&1
echo $? > "$OUT/cuda_tests.rc"

for workers in 1 2 4; do
  step "campaign: $workers worker(s) on GPU 0 for $CAMPAIGN_TIME"
  $PY -m fuzzer run --device cuda --gpus 0 --workers "$workers" --time "$CAMPAIGN_TIME" \
    --seed "$workers" --out "$OUT/corpus-w$workers" --json \
    > "$OUT/run-w$workers.json" 2> "$OUT/run-w$workers.log"
done

for model in fma_exp_cancel softmax_recompute conv_gelu_e8m0; do
  step "replay and minimize tests/models/$model.py"
  $PY -m fuzzer replay "tests/models/$model.py" --device cuda --json \
    > "$OUT/replay-$model.json" 2> "$OUT/replay-$model.log"
  $PY -m fuzzer minimize "tests/models/$model.py" -o "$OUT/min-$model" --time "$MINIMIZE_TIME" --json \
    --corpus "$OUT/slips" > "$OUT/min-$model.json" 2> "$OUT/min-$model.log"
done

first=$(ls "$OUT"/corpus-w*/*.pt 2>/dev/null | head -n 1)
if [ -n "$first" ]; then
  step "triage $first"
  $PY -m fuzzer triage "$first" --json > "$OUT/triage.json" 2> "$OUT/triage.log"
  $PY -m fuzzer minimize "$first" -o "$OUT/min-first" --time "$MINIMIZE_TIME" --json --corpus "$OUT/slips" \
    > "$OUT/min-first.json" 2> "$OUT/min-first.log"
fi

step "summary"
$PY - "$OUT" > "$OUT/summary.json" <<'PYEOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
def read(name):
    try:
        return json.loads((out / name).read_text())
    except (OSError, ValueError) as err:
        return {"unreadable": f"{name}: {type(err).__name__}"}
summary = {"env": read("env.json"),
           "cuda_tests_rc": (out / "cuda_tests.rc").read_text().strip()
           if (out / "cuda_tests.rc").exists() else None,
           "campaigns": {w: read(f"run-w{w}.json") for w in (1, 2, 4)},
           "replays": {p.stem.removeprefix("replay-"): read(p.name)
                       for p in sorted(out.glob("replay-*.json"))},
           "minimized": {p.stem.removeprefix("min-"): read(p.name)
                         for p in sorted(out.glob("min-*.json"))},
           "triage": read("triage.json") if (out / "triage.json").exists() else None}
print(json.dumps(summary, indent=1))
PYEOF
step "done: $OUT/summary.json"

#!/usr/bin/env bash
# The first device call of RESULTS §4's second GPU run (2026-11-27, H200): the smoke (cuda tests,
# a 4-worker campaign, two seeds, the first finding) under a deadline, then a state-only
# campaign on CUDA and the FTZ knob on the kept rsqrt case (its 60 s ran out: bench/gpu_call2.sh
# reran it). Writes to $1: bench/gpu_call1.sh "$OUT" on the device machine.
set -u
DEST=$1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
bench/gpu_smoke.sh /tmp/smoke --campaign 60s --workers "4" --minimize 40s \
  --seeds "fma_exp_cancel conv_gelu_e8m0" --deadline 320 --fetch "$DEST"
OFF="--strategy models=0 --strategy cast-roundtrip=0 --strategy model-overflow=0 --strategy special-functions=0 --strategy decimal=0 --strategy integer=0 --strategy shapes=0 --strategy vision-ops=0 --strategy signs=0 --strategy state=1"
timeout -s INT --kill-after=20 150 python -m fuzzer run --device cuda --workers 4 --time 130s \
  --seed 5 $OFF --out /tmp/state --json > "$DEST/state.json" 2> /tmp/state.log
tail -n 20 /tmp/state.log > "$DEST/state_tail.log"
tar -czf "$DEST/state_corpus.tar.gz" -C /tmp state /tmp/state.log
timeout 60 python -m fuzzer triage tests/data/cuda_bf16_rsqrt_subnormal_sort.pt \
  --knobs eager_numerics.disable_ftz --k 1 --no-bisect --json > "$DEST/ftz.json" 2> "$DEST/ftz.log"
ls -la "$DEST"

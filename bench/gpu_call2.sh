#!/usr/bin/env bash
# The second device call of RESULTS §4's 2026-11-27 run: narrow-integer accumulating writes on
# CUDA (bench/gpu_int_atomics.py), the repro of the GPU state case that failed in Triton, and the
# FTZ knob on the kept rsqrt case. Writes to $1.
set -u
DEST=$1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 110 python bench/gpu_int_atomics.py > "$DEST/int_atomics.txt" 2> "$DEST/int_atomics.log"
echo "int_atomics rc=$?"
timeout 100 python -m fuzzer triage tests/data/cuda_bf16_rsqrt_subnormal_sort.pt \
  --knobs eager_numerics.disable_ftz --k 1 --no-bisect --json > "$DEST/ftz.json" 2> "$DEST/ftz.log"
echo "ftz rc=$?"
cat "$DEST/int_atomics.txt"

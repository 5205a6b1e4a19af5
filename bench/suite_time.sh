#!/usr/bin/env bash
# The suite's time, as CI sees it, file by file and test by test (bench/results/34, 35):
#   bench/suite_time.sh fresh [DIR]   git clone of this checkout's HEAD into DIR (default
#                                     /tmp/numfuzz-fresh), then .ci/run there: seconds to exit
#   bench/suite_time.sh files [VENV]  each test file alone, two at a time, in a cgroup of its own
#                                     (cgroup v1 cpuacct, as root): wall and CPU seconds per file,
#                                     what the file costs whichever xdist worker it lands on
#   bench/suite_time.sh tests ID...   the same for single tests (pytest node ids), in .venv-ci
# Run nothing else meanwhile: the suite is CPU-bound on two cores, so any other load shows up.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
case "$mode" in
  fresh)
    dir=${2:-/tmp/numfuzz-fresh}
    rm -rf "$dir" && git clone -q "$PWD" "$dir"
    start=$(date +%s)
    (cd "$dir" && .ci/run > "$dir.log" 2>&1) && rc=0 || rc=$?
    echo "fresh clone of $(git rev-parse --short HEAD): .ci/run rc=$rc in $(( $(date +%s) - start )) s;" \
         "$(grep -E '^[0-9]+ passed' "$dir.log" | tail -1) (log: $dir.log)"
    ;;
  files|tests)
    venv=.venv-ci
    if [ "$mode" = files ]; then venv=${2:-.venv-ci}; fi
    root=/sys/fs/cgroup/cpuacct/numfuzz-suite
    mkdir -p "$root" || { echo "suite_time.sh files: needs cgroup v1 cpuacct as root" >&2; exit 2; }
    export root venv
    one() {  # one file or test in its own cgroup: name, wall s, CPU s (its Ray daemons and
             # workers too), and pytest's last line
      local name cg t0
      name=$(basename "$1" .py | tr -c 'A-Za-z0-9_\n' _); cg=$root/$name
      mkdir -p "$cg" && echo 0 > "$cg/cpuacct.usage"
      t0=$(date +%s)
      bash -c "echo \$\$ > $cg/cgroup.procs; exec $venv/bin/python -m pytest -q -p no:cacheprovider '$1'" \
        > "/tmp/suite_time-$name.log" 2>&1 || true
      printf '%s\t%s\t%s\t%s\n' "$name" "$(( $(date +%s) - t0 ))" \
        "$(( $(cat "$cg/cpuacct.usage") / 1000000000 ))" "$(tail -n 1 "/tmp/suite_time-$name.log")"
    }
    export -f one
    # a failing file's or test's time is no measure: read the last column
    printf '%s\twall_s\tcpu_s\tpytest\n' "${mode%s}"
    if [ "$mode" = files ]; then ls tests/test_*.py; else printf '%s\n' "${@:2}"; fi |
      xargs -P 2 -I{} bash -c 'one "{}"' | sort -t$'\t' -k3 -n -r
    ;;
  *) sed -n 2,9p "$0" >&2; exit 2 ;;
esac

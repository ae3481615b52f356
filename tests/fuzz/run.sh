#!/usr/bin/env bash
# tests/fuzz/run.sh: builds the libFuzzer harnesses, runs each for N seconds on a copy of its seed corpus
# SPDX-License-Identifier: BSD-3-Clause
#
# usage: tests/fuzz/run.sh [SECONDS [HARNESS...]]     (60 s each; csr_features convert model mmread modelfile)
# env:   BUILD            build directory (build-fuzz), set up with CC=clang when missing
#        SPMV_FUZZ_MODES  harness modes, comma-separated or "all" (tests/fuzz/fuzz_common.h)
#        FUZZ_ARGS        more libFuzzer flags, e.g. "-jobs=4 -workers=4" for a longer run
#        PYTHON           the interpreter with pyspmv installed that runs modelfile, a Python
#                         harness of load_model (python3)
# Prints executions per harness; exits 1 when any harness finds something, with the input kept in
# $BUILD/fuzz-findings/.
set -euo pipefail
cd "$(dirname "$0")/../.."

secs=${1:-60}
[ $# -gt 0 ] && shift
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(csr_features convert model mmread modelfile)
build=${BUILD:-build-fuzz}
python=${PYTHON:-python3}

# The kernels thread from 64 stored slots here (SPMV_OMP_MIN_WORK; 250,000 in the package), so that
# the fuzzer's small matrices reach the threaded loops too.
targets=()
for h in "${harnesses[@]}"; do [ "$h" = modelfile ] || targets+=("tests/fuzz/fuzz_$h"); done
if [ ${#targets[@]} -gt 0 ]; then
    if [ ! -f "$build/build.ninja" ]; then
        CC=${CC:-clang} meson setup "$build" -Dfuzz=true -Dcuda=disabled -Dc_args=-DSPMV_OMP_MIN_WORK=64
    fi
    ninja -C "$build" "${targets[@]}"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
findings="$build/fuzz-findings"
mkdir -p "$findings"
# libomp's threads spin for 200 ms after each parallel region: on every execution that is CPU
# taken from the fuzzer (and, on a shared machine, from everyone else).
export KMP_BLOCKTIME=0
status=0
for h in "${harnesses[@]}"; do
    log="$work/$h.log"
    rc=0
    if [ "$h" = modelfile ]; then
        # Python, over the installed pyspmv: its seeds are made at start (the shipped defaults and a small
        # model of each kind); same time limit, RSS limit and per-execution timeout as the C harnesses.
        "$python" tests/fuzz/fuzz_modelfile.py -max_total_time="$secs" --rss-limit-mb=2048 --timeout=30 \
            --findings="$findings" >"$log" 2>&1 || rc=$?
    else
        cp -r "tests/fuzz/corpus/$h" "$work/$h"
        # -malloc_limit_mb: the features' pass marks the diagonals in one byte each (nrows + ncols - 1,
        # up to 4 GiB for the widest matrix int32 allows), calloc'd and touched only at the entries'
        # diagonals; a 29-byte input of 2^31 columns asked 2 GiB. rss_limit_mb still bounds what is used.
        # (That input is not a seed: each run of it costs ASan 0.1-0.2 s, and as a seed it cut
        # csr_features from 55 to 5 executions a second.)
        # shellcheck disable=SC2086  # FUZZ_ARGS is a list of flags
        "$build/tests/fuzz/fuzz_$h" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=4096 -timeout=30 -max_len=4096 \
            -print_final_stats=1 -artifact_prefix="$findings/$h-" ${FUZZ_ARGS:-} "$work/$h" >"$log" 2>&1 || rc=$?
    fi
    execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log" | tail -1)
    rate=$(grep -o 'exec/s: [0-9]*' "$log" | tail -1 | awk '{print $2}' || true)
    if [ "$rc" -eq 0 ]; then
        corpus="seeds made at start"
        [ "$h" = modelfile ] || corpus="corpus $(ls "tests/fuzz/corpus/$h" | wc -l) -> $(ls "$work/$h" | wc -l) files"
        printf '%-14s ok       %10s executions  %6s exec/s  %s\n' "$h" "${execs:-?}" "${rate:-?}" "$corpus"
    else
        status=1
        printf '%-14s FINDING  %10s executions (exit %s); the log ends:\n' "$h" "${execs:-?}" "$rc"
        grep -E 'FUZZ FINDING|ERROR:|SUMMARY|runtime error|^    #[0-9]+ |^  File |Error' "$log" | head -25 ||
            tail -25 "$log"
        grep -E 'Test unit written to' "$log" || true
        cp "$log" "$findings/$h.log"
    fi
done
exit $status

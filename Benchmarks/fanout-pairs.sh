#!/usr/bin/env bash
# SSE fan-out, alternating: the C floor (Benchmarks/sse-fanout/sse_server.c), then each given gateway binary, RUNS
# times; each server fresh, STREAMS streams on one live query, 5 changes, the project's load client
# (Benchmarks/sse-fanout/sse_fanout.c). Prints each run's figures and each gateway's p50/p99 over the floor run just
# before it. To compare two commits, build each (`swift build -c release --product convex-gateway`) and copy the binary
# aside first. Needs Benchmarks/run-gateway.sh to have built .build-release/sse-server and sse-fanout once.
#
# A label given `c` instead of a binary runs the floor again: a control (the floor against itself), which shows how far
# one pair's ratio moves with the machine alone. The end prints, per label, the medians of its ratios and how many of
# its pairs have both at or below 1.0; with two labels or more, each two labels' same-run ratios
# (Benchmarks/compare_pairs.py, which also combines the saved output of several sets). To compare two binaries, run one
# of them under a second label too (a copy of the file): that control shows how far identical binaries stand apart.
#
# Usage: Benchmarks/fanout-pairs.sh LABEL=GATEWAY_BINARY|c [LABEL=GATEWAY_BINARY|c ...]
#   env: STREAMS=10000, RUNS=3, LOAD=0 (LOAD=2: two busy loops run meanwhile, as a loaded machine),
#        CHURN=0 (CHURN=500: 500 more streams a second open on the same query and go 1 s after their first event,
#        from the server's start until the fan-out ends; Benchmarks/churn_only.py),
#        ROUNDS=5 (changes per run), FLOOR_LAST=0 (FLOOR_LAST=1: each pair runs the gateway first and the floor after it,
#        and the ratio is to the floor run just after)
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n 20000
STREAMS=${STREAMS:-10000}
[ "$#" -ge 1 ] || { echo "usage: $0 LABEL=GATEWAY_BINARY ..." >&2; exit 2; }
LOADERS=()
ratios=$(mktemp)
cleanup() {
    for pid in "${LOADERS[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -f "$ratios"
}
trap cleanup EXIT
for _ in $(seq 1 "${LOAD:-0}"); do (while :; do :; done) & LOADERS+=($!); done

. Benchmarks/toolkit.sh

one() { # binary|c -> prints the client's summary line
    local pid port log
    log=$(mktemp)
    start_fanout_server "$1" "$STREAMS" "$log"
    pid=$server_pid
    port=$server_port
    local churn=""
    if [ "${CHURN:-0}" != 0 ]; then
        python3 Benchmarks/churn_only.py "$port" "/subscribe/conformance:counter?name=fanout" "$CHURN" 120 1 \
            >"$log.churn" 2>&1 &
        churn=$!
        sleep 2 # the churn at its steady state before the fan-out's streams open
    fi
    run_fanout_load "$port" "$pid" "$STREAMS" "${ROUNDS:-5}" 2>&1 | grep -E "^fanout|did not|closed|per_stream" |
        tr '\n' ' ' || true
    if [ -n "$churn" ]; then
        kill -TERM "$churn" 2>/dev/null || true
        wait "$churn" 2>/dev/null || true
        tr '\n' ' ' <"$log.churn"
        rm -f "$log.churn"
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$log"
}

for run in $(seq 1 "${RUNS:-3}"); do
    if [ "${FLOOR_LAST:-0}" != 1 ]; then
        floor=$(one c)
        echo "run $run floor: $floor"
    fi
    for pair in "$@"; do
        label=${pair%%=*}
        line=$(one "${pair#*=}")
        echo "run $run $label: $line"
        if [ "${FLOOR_LAST:-0}" = 1 ]; then
            floor=$(one c)
            echo "run $run floor: $floor"
        fi
        f50=$(figure p50_ms "$floor") f99=$(figure p99_ms "$floor")
        g50=$(figure p50_ms "$line") g99=$(figure p99_ms "$line")
        if [ -n "$f50" ] && [ -n "$g50" ]; then
            awk -v a="$g50" -v b="$f50" -v c="$g99" -v d="$f99" -v l="$label" -v r="$run" \
                'BEGIN { printf "run %s %s / floor: p50 %.2f, p99 %.2f\n", r, l, a / b, c / d }' | tee -a "$ratios"
        fi
    done
done
echo "per label: median p50 and p99 ratio to the floor, and the pairs with both at or below 1.0"
awk '{ sub(",", "", $7); n[$3]++; p50[$3, n[$3]] = $7; p99[$3, n[$3]] = $9; if ($7 <= 1 && $9 <= 1) met[$3]++ }
    function median(a, l, k,    i, j, t, v) {
        for (i = 1; i <= k; i++) v[i] = a[l, i]
        for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    END { for (l in n) printf "%s: p50 %.2f, p99 %.2f; %d of %d pairs at or below 1.0\n", l, median(p50, l, n[l]), median(p99, l, n[l]), met[l], n[l] }' "$ratios"
if [ "$(awk '{ print $3 }' "$ratios" | sort -u | wc -l)" -ge 2 ]; then
    echo "same-run pairs: each two labels' ratio in the same run (Benchmarks/compare_pairs.py)"
    python3 Benchmarks/compare_pairs.py "$ratios"
fi

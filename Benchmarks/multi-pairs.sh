#!/usr/bin/env bash
# Streams of several subscriptions against single-subscription streams, PAIRS times: each time
# `Benchmarks/run-gateway.sh multi` (MULTI_STREAMS single-subscription streams on a fresh gateway, then as many streams
# of 10 subscriptions on another, ROUNDS changes each), and the single-subscription run made again after them (a
# control: how far single against single moves with the machine alone). Prints each pair's multi / single and
# single again / single, p50 and p99, then their medians and how many pairs are at or below 1.2 at p99.
#
# Usage: Benchmarks/multi-pairs.sh GATEWAY_BINARY   (env: PAIRS=6, and run-gateway.sh's MULTI_STREAMS, ROUNDS)
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:?usage: $0 GATEWAY_BINARY}
ratios=$(mktemp)
trap 'rm -f "$ratios"' EXIT
. Benchmarks/toolkit.sh
for pair in $(seq 1 "${PAIRS:-6}"); do
    lines=$(MULTI_CONTROL=1 GATEWAY_BINARY="$binary" Benchmarks/run-gateway.sh multi 2>&1 | grep "^fanout streams=" || true)
    single=$(sed -n 1p <<<"$lines") multi=$(sed -n 2p <<<"$lines") again=$(sed -n 3p <<<"$lines")
    if [ -z "$again" ]; then
        echo "pair $pair: a run gave no figures"
        continue
    fi
    awk -v p="$pair" -v s50="$(figure p50_ms "$single")" -v s99="$(figure p99_ms "$single")" \
        -v m50="$(figure p50_ms "$multi")" -v m99="$(figure p99_ms "$multi")" \
        -v a50="$(figure p50_ms "$again")" -v a99="$(figure p99_ms "$again")" 'BEGIN {
            printf "pair %s: single %.2f / %.2f ms, multi %.2f / %.2f ms, single again %.2f / %.2f ms;", p, s50, s99, m50, m99, a50, a99
            printf " multi / single p50 %.2f p99 %.2f; single again / single p50 %.2f p99 %.2f\n", m50 / s50, m99 / s99, a50 / s50, a99 / s99
        }' | tee -a "$ratios"
done
awk '{ n++; m50[n] = $(NF - 10); m99[n] = $(NF - 8); c50[n] = $(NF - 2); c99[n] = $NF; sub(";", "", m99[n]) }
    function median(a, k,    i, j, t, v) {
        for (i = 1; i <= k; i++) v[i] = a[i]
        for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    END {
        if (!n) exit
        for (i = 1; i <= n; i++) { if (m99[i] <= 1.2) met++; if (c99[i] <= 1.2) cmet++ }
        printf "medians: multi / single p50 %.2f, p99 %.2f (%d of %d pairs at or below 1.2 at p99); ", median(m50, n), median(m99, n), met, n
        printf "single again / single p50 %.2f, p99 %.2f (%d of %d)\n", median(c50, n), median(c99, n), cmet, n
    }' "$ratios"

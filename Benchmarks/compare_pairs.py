#!/usr/bin/env python3
"""Compares gateway binaries run by Benchmarks/fanout-pairs.sh, pair by pair within each run.

Each line `run N LABEL / floor: p50 X, p99 Y` that fanout-pairs.sh prints is one binary's figures over the floor run
before it. Two labels of the same run (same set, same N) make a same-run pair; their ratio leaves out what moved the
whole run (the floor, the machine). For every two labels, this prints the median of those ratios, a 95 % interval for
that median (bootstrap over the pairs, seeded, so the same input prints the same figures), and in how many pairs the
first label was behind (ratio above 1), ahead or level.

Give it the output of several sets (the labels' order changed from set to set) to combine them. With a label that runs
the same binary as another under a second name (a control), the control's line shows how far two identical binaries
stand apart in these sets: the yardstick for any other pair.

Usage: python3 Benchmarks/compare_pairs.py FILE [FILE ...] [--base LABEL]
  --base LABEL: only the pairs of every other label against LABEL.
"""

import argparse
import itertools
import random
import re
import statistics
import sys

LINE = re.compile(r"run (\d+) (\S+) / floor: p50 ([\d.]+), p99 ([\d.]+)")


def read_runs(paths):
    """{(file, run): {label: (p50, p99)}} from fanout-pairs.sh output files."""
    runs = {}
    for path in paths:
        with open(path) as lines:
            for line in lines:
                match = LINE.match(line)
                if match:
                    run = runs.setdefault((path, int(match.group(1))), {})
                    run[match.group(2)] = (float(match.group(3)), float(match.group(4)))
    return runs


def median_interval(ratios, draws=4000, seed=1):
    """The 2.5th and 97.5th percentiles of the median over bootstrap resamples of `ratios`."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def describe(first, second, runs):
    lines = []
    for index, name in ((0, "p50"), (1, "p99")):
        ratios = [run[first][index] / run[second][index] for run in runs if first in run and second in run]
        if not ratios:
            return []
        low, high = median_interval(ratios)
        behind = sum(ratio > 1 for ratio in ratios)
        ahead = sum(ratio < 1 for ratio in ratios)
        lines.append(
            f"{first} / {second} {name}: median {statistics.median(ratios):.3f} (95 % interval {low:.3f}-{high:.3f}), "
            f"pairs {min(ratios):.2f}-{max(ratios):.2f}; behind in {behind}, ahead in {ahead}, "
            f"level in {len(ratios) - behind - ahead} of {len(ratios)}"
        )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--base")
    arguments = parser.parse_args()
    runs = list(read_runs(arguments.files).values())
    labels = sorted({label for run in runs for label in run})
    if arguments.base is not None and arguments.base not in labels:
        sys.exit(f"compare_pairs: no run has the label {arguments.base!r} (labels: {', '.join(labels) or 'none'})")
    if arguments.base is None:
        pairs = itertools.combinations(labels, 2)
    else:
        pairs = ((label, arguments.base) for label in labels if label != arguments.base)
    printed = False
    for first, second in pairs:
        for line in describe(first, second, runs):
            print(line)
            printed = True
    if not printed:
        sys.exit("compare_pairs: no run has two gateway labels to compare")


if __name__ == "__main__":
    main()

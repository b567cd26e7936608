"""Python side of Benchmarks/ConvexClientBench: the official client (convex 0.8.1) against the same deployment.

    python client_bench.py mutation URL ROUNDS   # sequential mutation round trips
    python client_bench.py subscribe URL ROUNDS  # prints "ready", then records update latency of bench:latest

Prints one JSON line {"us": [samples in microseconds]}.
"""
import json
import sys
import time

from convex import ConvexClient

mode, url, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = ConvexClient(url)

if mode == "mutation":
    for _ in range(50):
        client.mutation("conformance:increment", {"name": "py-warm"})
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        client.mutation("conformance:increment", {"name": "py-rtt"})
        samples.append((time.perf_counter_ns() - start) / 1000)
elif mode == "subscribe":
    subscription = client.subscribe("bench:latest", {})
    iterator = iter(subscription)
    last = next(iterator)
    print("ready", flush=True)
    samples = []
    while len(samples) < rounds:
        value = next(iterator)
        received = time.time_ns() / 1000
        if value != last:
            samples.append(received - float(value))
            last = value
    subscription.unsubscribe()
else:
    raise SystemExit(f"unknown mode {mode!r}: expected 'mutation' or 'subscribe'")

print(json.dumps({"us": samples}), flush=True)

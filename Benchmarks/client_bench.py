"""Python side of Benchmarks/ConvexClientBench: the official client (convex 0.8.1) against the same deployment.

    python client_bench.py mutation URL ROUNDS   # sequential mutation round trips
    python client_bench.py subscribe URL ROUNDS  # prints "ready", then records arrivals of conformance:counter

Prints one JSON line: {"us": [round trips in microseconds]} or {"arrivals": [[counter value, arrival µs], ...]}.
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
    subscription = client.subscribe("conformance:counter", {"name": "py-sub"})
    iterator = iter(subscription)
    last = next(iterator)
    print("ready", flush=True)
    arrivals = []
    while len(arrivals) < rounds:
        value = next(iterator)
        received = time.time_ns() / 1000
        if value != last:
            arrivals.append([float(getattr(value, "value", value)), received])
            last = value
    subscription.unsubscribe()
    print(json.dumps({"arrivals": arrivals}), flush=True)
    raise SystemExit(0)
else:
    raise SystemExit(f"unknown mode {mode!r}: expected 'mutation' or 'subscribe'")

print(json.dumps({"us": samples}), flush=True)

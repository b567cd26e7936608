"""Cold-call latency the gateway adds over the deployment's own HTTP API.

Sends N sequential requests for each pair below, interleaved (gateway, direct, gateway, direct, ...), each on its own
keep-alive connection, with arguments that change on every request so no cached result or live subscription can
answer it:

  GET  /query/echo:echo?n=<i>        (gateway: new upstream subscription, first result)  vs  POST /api/query
  POST /query/echo:echo  {"n": i}    (gateway: one-shot upstream query)                   vs  POST /api/query
  POST /mutation/echo:echoMutation   {"n": i}                                             vs  POST /api/mutation

Prints p50/p90/p99 of each and the added latency (gateway minus direct) at p50 and p99.
Usage: gateway_latency.py GATEWAY_PORT DEPLOYMENT_PORT [N]
"""

import http.client
import json
import sys
import time


def percentile(values, p):
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, int(-(-p * len(ordered) // 100)) - 1))
    return ordered[index]


class Endpoint:
    def __init__(self, port):
        self.connection = http.client.HTTPConnection("127.0.0.1", port)

    def call(self, method, path, body=None):
        headers = {"Content-Type": "application/json"} if body is not None else {}
        payload = json.dumps(body).encode() if body is not None else None
        start = time.perf_counter_ns()
        self.connection.request(method, path, body=payload, headers=headers)
        response = self.connection.getresponse()
        data = response.read()
        elapsed = (time.perf_counter_ns() - start) / 1e6
        if response.status != 200:
            raise RuntimeError(f"{method} {path}: {response.status} {data[:200]!r}")
        return elapsed, data


def main():
    gateway_port, deployment_port = int(sys.argv[1]), int(sys.argv[2])
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    salt = time.time_ns() % 1_000_000_000  # distinct arguments across runs against the same gateway
    pairs = {
        "GET /query (new subscription)": (
            lambda g, i: g.call("GET", f"/query/echo:echo?n={i}&s={salt}"),
            lambda d, i: d.call("POST", "/api/query", {"path": "echo:echo", "args": {"n": i, "s": salt}, "format": "json"}),
        ),
        "POST /query (one-shot)": (
            lambda g, i: g.call("POST", "/query/echo:echo", {"n": i, "s": salt}),
            lambda d, i: d.call("POST", "/api/query", {"path": "echo:echo", "args": {"n": i, "s": salt}, "format": "json"}),
        ),
        "POST /mutation": (
            lambda g, i: g.call("POST", "/mutation/echo:echoMutation", {"n": i, "s": salt}),
            lambda d, i: d.call("POST", "/api/mutation", {"path": "echo:echoMutation", "args": {"n": i, "s": salt}, "format": "json"}),
        ),
    }
    print(f"{count} sequential requests per row, interleaved with the direct call; times in ms")
    print(f"{'route':32} {'gateway p50':>11} {'p90':>7} {'p99':>7} | {'direct p50':>10} {'p90':>7} {'p99':>7} | {'added p50':>9} {'added p99':>9}")
    for offset, (name, (via_gateway, direct)) in enumerate(pairs.items()):
        gateway, deployment = Endpoint(gateway_port), Endpoint(deployment_port)
        for i in range(20):  # warm-up: connections, code paths
            via_gateway(gateway, -1000 * (offset + 1) - i)
            direct(deployment, -1000 * (offset + 1) - i)
        g_times, d_times = [], []
        for i in range(count):
            n = offset * 10_000_000 + i
            elapsed, body = via_gateway(gateway, n)
            if json.loads(body).get("n") != n:
                raise RuntimeError(f"{name}: unexpected body {body[:200]!r}")
            g_times.append(elapsed)
            d_times.append(direct(deployment, n)[0])
        g = [percentile(g_times, p) for p in (50, 90, 99)]
        d = [percentile(d_times, p) for p in (50, 90, 99)]
        print(f"{name:32} {g[0]:11.3f} {g[1]:7.3f} {g[2]:7.3f} | {d[0]:10.3f} {d[1]:7.3f} {d[2]:7.3f} | {g[0] - d[0]:9.3f} {g[2] - d[2]:9.3f}")


main()

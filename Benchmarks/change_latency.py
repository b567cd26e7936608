"""Latency from a mutation to a live query's new value: through the gateway's SSE stream, and for the official
Python client (`convex`) subscribed directly to the same deployment, in one run.

Two watcher processes hold the same live query, `conformance:counter {"name": "latency"}`:
  - gateway: `GET /subscribe/conformance:counter?name=latency` on the gateway, read from a plain socket;
  - direct:  the official Python client's `subscribe` on the deployment (its own WebSocket session).
Each prints `<value> <CLOCK_MONOTONIC ns>` as a value arrives. N times, the driver takes a CLOCK_MONOTONIC
timestamp, sends `POST /api/mutation conformance:increment` to the deployment itself (neither path's connection
carries the write), and waits until both watchers have reported the new count; then a pause of PAUSE_MS lets the
machine settle. Latency = arrival - send, per watcher and round. Prints p50/p90/p99/max of each and the gateway's
ratio to the direct client at p50 and p99.

Usage: change_latency.py GATEWAY_PORT DEPLOYMENT_PORT [N] [PAUSE_MS]   (run with the .venv's python, which has
`convex`)
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import time

QUERY = "conformance:counter"
NAME = "latency"


def percentile(values, p):
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, int(-(-p * len(ordered) // 100)) - 1))
    return ordered[index]


def watch_gateway(port):
    connection = socket.create_connection(("127.0.0.1", port))
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    connection.sendall(
        f"GET /subscribe/{QUERY}?name={NAME} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    pending = b""
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            return
        now = time.monotonic_ns()
        pending += chunk
        while b"\ndata: " in pending:
            start = pending.index(b"\ndata: ") + 7
            end = pending.find(b"\n", start)
            if end < 0:
                break
            print(int(pending[start:end]), now, flush=True)
            pending = pending[end:]


def watch_direct(port):
    import convex

    client = convex.ConvexClient(f"http://127.0.0.1:{port}")
    for value in client.subscribe(QUERY, {"name": NAME}):
        arrived = time.monotonic_ns()
        print(int(getattr(value, "value", value)), arrived, flush=True)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] in ("--watch-gateway", "--watch-direct"):
        (watch_gateway if sys.argv[1] == "--watch-gateway" else watch_direct)(int(sys.argv[2]))
        return
    gateway_port, deployment_port = int(sys.argv[1]), int(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    pause = (int(sys.argv[4]) if len(sys.argv) > 4 else 20) / 1000
    watchers = {
        "gateway": subprocess.Popen(
            [sys.executable, __file__, "--watch-gateway", str(gateway_port)], stdout=subprocess.PIPE, text=True
        ),
        "direct": subprocess.Popen(
            [sys.executable, __file__, "--watch-direct", str(deployment_port)], stdout=subprocess.PIPE, text=True
        ),
    }
    try:
        latest = {}
        for name, process in watchers.items():
            value, _ = process.stdout.readline().split()
            latest[name] = int(value)
        deployment = http.client.HTTPConnection("127.0.0.1", deployment_port)
        deployment.connect()
        deployment.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        latencies = {name: [] for name in watchers}
        body = json.dumps({"path": "conformance:increment", "args": {"name": NAME}, "format": "json"})
        for _ in range(rounds):
            sent = time.monotonic_ns()
            deployment.request("POST", "/api/mutation", body=body, headers={"Content-Type": "application/json"})
            answer = json.loads(deployment.getresponse().read())
            if answer.get("status") != "success":
                raise RuntimeError(f"mutation failed: {answer}")
            count = int(answer["value"])
            for name, process in watchers.items():
                while latest[name] < count:
                    line = process.stdout.readline()
                    if not line:
                        raise RuntimeError(f"the {name} watcher ended")
                    value, arrived = (int(field) for field in line.split())
                    latest[name] = value
                    if value == count:
                        latencies[name].append((arrived - sent) / 1e6)
                    elif value > count:
                        raise RuntimeError(f"the {name} watcher skipped {count}")
            time.sleep(pause)
        for name, values in latencies.items():
            print(
                f"{name:8} n={len(values)} p50 {percentile(values, 50):.3f} ms  p90 {percentile(values, 90):.3f} ms  "
                f"p99 {percentile(values, 99):.3f} ms  max {max(values):.3f} ms"
            )
        gateway, direct = latencies["gateway"], latencies["direct"]
        print(
            f"gateway / direct: p50 {percentile(gateway, 50) / percentile(direct, 50):.2f}x  "
            f"p99 {percentile(gateway, 99) / percentile(direct, 99):.2f}x"
        )
    finally:
        for process in watchers.values():
            process.kill()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()

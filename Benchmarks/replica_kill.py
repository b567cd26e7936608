#!/usr/bin/env python3
"""A replica killed under load, measured from the clients' side (Benchmarks/replicas.sh kill).

STREAMS event streams follow one counter through the balancer while a writer increments it every 20 ms and a reader
GETs it every 20 ms (each on a fresh connection, as a simple client would). Once every stream has had an event, and
then for 3 s more, replica K is killed with SIGKILL (its pid from the state directory scripts/replicas keeps). Each
stream that ends connects again at once with `Last-Event-ID` (the infrastructure's own time; an EventSource waits the
stream's `retry:` first, 3 s by default). Printed: how many streams were cut, the time from the kill to each cut
stream's first event after it (p50, p99, max: when every stream was back), and how many calls and reconnects got an
answer other than 200, by status. Standard library only.

Usage: replica_kill.py BALANCER_PORT STATE_DIR STREAMS [REPLICA]
"""

import asyncio
import os
import signal
import sys
import time
from collections import Counter

PORT = int(sys.argv[1])
STATE = sys.argv[2]
STREAMS = int(sys.argv[3])
REPLICA = int(sys.argv[4]) if len(sys.argv) > 4 else 1
NAME = f"killbench{os.getpid()}"
PATH = f"/subscribe/conformance:counter?name={NAME}"

statuses = Counter()  # "<what> <status>" -> count, for answers other than 200
events = [[] for _ in range(STREAMS)]  # per stream: monotonic times of its events
cut = set()  # streams whose connection ended after the kill
kill_at = None
stop = False


async def request(method, path, body=b""):
    """One request on a fresh connection; the status, or 0 when the connection failed."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", PORT)
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        if body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        writer.write(head.encode() + b"\r\n" + body)
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 10)
        await asyncio.wait_for(reader.read(), 10)
        writer.close()
        return int(line.split()[1]) if line else 0
    except (OSError, asyncio.TimeoutError, ValueError, IndexError):
        return 0


async def caller(what, method, path, body=b""):
    while not stop:
        status = await request(method, path, body)
        if status != 200:
            statuses[f"{what} {status}"] += 1
        await asyncio.sleep(0.02)


async def stream(i):
    last_id = None
    while not stop:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", PORT)
            head = f"GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            if last_id:
                head += f"Last-Event-ID: {last_id}\r\n"
            writer.write(head.encode() + b"\r\n")
            await writer.drain()
            status_line = await reader.readline()
            status = int(status_line.split()[1]) if status_line else 0
            if status != 200:
                statuses[f"stream {status}"] += 1
                writer.close()
                await asyncio.sleep(0.05)
                continue
            while not stop:
                line = await reader.readline()
                if not line:
                    break
                if line.startswith(b"id: "):
                    last_id = line[4:].strip().decode()
                    events[i].append(time.monotonic())
            writer.close()
        except (OSError, ValueError, IndexError):
            statuses["stream 0"] += 1
        if kill_at is not None:
            cut.add(i)


async def main():
    global kill_at, stop
    tasks = [asyncio.create_task(stream(i)) for i in range(STREAMS)]
    body = f'{{"name":"{NAME}"}}'.encode()
    callers = [
        asyncio.create_task(caller("mutation", "POST", "/mutation/conformance:increment", body)),
        asyncio.create_task(caller("query", "GET", f"/query/conformance:counter?name={NAME}")),
    ]
    deadline = time.monotonic() + 60
    while any(not e for e in events) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    ready = sum(1 for e in events if e)
    if ready < STREAMS:
        print(f"only {ready} of {STREAMS} streams had an event within 60 s", flush=True)
    await asyncio.sleep(3)
    statuses.clear()
    with open(os.path.join(STATE, f"replica-{REPLICA}.pid")) as f:
        pid = int(f.read().strip())
    kill_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    await asyncio.sleep(10)
    stop = True
    for task in tasks + callers:
        task.cancel()
    await asyncio.gather(*tasks, *callers, return_exceptions=True)
    backs = sorted(
        (next((t for t in events[i] if t > kill_at), float("inf")) - kill_at) * 1000 for i in cut
    )
    back = [b for b in backs if b != float("inf")]
    never = len(backs) - len(back)

    def pct(p):
        return back[min(len(back) - 1, max(0, int(len(back) * p + 0.999) - 1))] if back else float("nan")

    print(
        f"kill: streams={STREAMS} cut={len(cut)} never_back={never} back_p50_ms={pct(0.5):.0f} "
        f"back_p99_ms={pct(0.99):.0f} back_max_ms={max(back) if back else float('nan'):.0f} "
        f"errors={sum(statuses.values())} {dict(statuses)}",
        flush=True,
    )


asyncio.run(main())

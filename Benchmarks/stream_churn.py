"""Streams that come and go, and a client that keeps calling meanwhile (BENCHMARKS.md, "Clients that leave").

Usage: stream_churn.py PORT PID steady RATE SECONDS HOLD
       stream_churn.py PORT PID bursts COUNT BURSTS

steady: RATE streams a second are opened on a live query, each held HOLD seconds, then dropped, for SECONDS.
bursts: COUNT streams are opened at once and all dropped, BURSTS times in a row (page reloads en masse).

Meanwhile one more client sends a mutation and a GET in turn, as fast as they are answered, and counts the answers
that are not 200 and times the slowest; and one watching stream, open throughout on the query those mutations change,
times the longest silence between the bytes it receives (events and heartbeats): how long the gateway stalled. Every 50 ms the gateway's open descriptors (/proc/PID/fd) are sampled: held = open descriptors -
the descriptors the gateway has at rest (the calling client's included) - the streams the load holds open now. A dropped
client half-closes (shutdown(SHUT_WR)) and reads until the gateway closes its side: that time is the release
latency. Only loopback; every loop is bounded in time.
"""
import asyncio
import os
import sys
import time

STREAM_PATH = "/subscribe/conformance:counter?name=churn"
MUTATION = b'{"name":"churn"}'


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def percentile(values, fraction):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Load:
    def __init__(self, port: int, pid: int):
        self.port = port
        self.pid = pid
        self.live = 0
        self.release_ms = []
        self.refused = 0
        self.failures = 0
        self.calls = {}
        self.held = []
        self.slowest_call = 0.0
        self.longest_silence = 0.0
        self.watched_events = 0
        self.stop = False

    async def stream(self, hold: float):
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            self.failures += 1
            return
        self.live += 1
        dropped = False
        try:
            writer.write(f"GET {STREAM_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            if b" 200 " not in head.split(b"\r\n", 1)[0]:
                self.refused += 1
                return
            data = b""
            while b"event: value" not in data and b"data:" not in data:
                chunk = await asyncio.wait_for(reader.read(4096), 30)
                if not chunk:
                    raise ConnectionError("stream closed early")
                data += chunk
            await asyncio.sleep(hold)
            closed_at = time.monotonic()
            writer.transport.write_eof()
            self.live -= 1  # from here on a dropped client, until the gateway lets it go
            dropped = True
            while await asyncio.wait_for(reader.read(65536), 30):
                pass
            self.release_ms.append((time.monotonic() - closed_at) * 1000)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            self.failures += 1
        finally:
            if not dropped:
                self.live -= 1
            writer.close()

    async def caller(self):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        requests = [
            f"POST /mutation/conformance:increment HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(MUTATION)}\r\n\r\n".encode() + MUTATION,
            b"GET /query/conformance:counter?name=churn HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        ]
        turn = 0
        while not self.stop:
            sent = time.monotonic()
            try:
                writer.write(requests[turn % 2])
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                status = int(head.split(b" ", 2)[1])
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                await reader.readexactly(length)
                self.slowest_call = max(self.slowest_call, time.monotonic() - sent)
                self.calls[status] = self.calls.get(status, 0) + 1
                if b"connection: close" in head.lower():
                    writer.close()
                    reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as error:
                self.calls[type(error).__name__] = self.calls.get(type(error).__name__, 0) + 1
                writer.close()
                await asyncio.sleep(0.01)
                reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            turn += 1
        writer.close()

    async def watcher(self):
        """One stream open throughout: the longest time between two reads that brought bytes."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(f"GET {STREAM_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
        last = time.monotonic()
        try:
            while not self.stop:
                try:
                    chunk = await asyncio.wait_for(reader.read(65536), 0.5)
                except asyncio.TimeoutError:
                    continue
                if not chunk:
                    raise ConnectionError("the watching stream was closed by the gateway")
                now = time.monotonic()
                self.longest_silence = max(self.longest_silence, now - last)
                self.watched_events += chunk.count(b"\ndata:")
                last = now
        finally:
            writer.close()

    async def sampler(self, rest: int):
        while not self.stop:
            self.held.append(max(0, open_fds(self.pid) - rest - self.live))
            await asyncio.sleep(0.05)


async def main() -> None:
    port, pid, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    load = Load(port, pid)
    # The query is made live first, so every stream starts from the hub.
    await load.stream(0)
    load.release_ms.clear()
    caller = asyncio.create_task(load.caller())
    watcher = asyncio.create_task(load.watcher())
    await asyncio.sleep(0.5)
    rest = open_fds(pid)  # the gateway at rest, the caller's and the watcher's connections included
    sampler = asyncio.create_task(load.sampler(rest))
    started = time.monotonic()
    streams = []
    if mode == "steady":
        rate, seconds, hold = float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
        opened = 0
        while time.monotonic() - started < seconds:
            due = int((time.monotonic() - started) * rate)
            while opened < due:
                streams.append(asyncio.create_task(load.stream(hold)))
                opened += 1
            await asyncio.sleep(0.005)
        label = f"steady: {rate:g} streams/s for {seconds:g} s, each held {hold:g} s ({opened} streams)"
    else:
        count, bursts = int(sys.argv[4]), int(sys.argv[5])
        for _ in range(bursts):
            await asyncio.gather(*(load.stream(0) for _ in range(count)))
        label = f"bursts: {bursts} x {count} streams opened together and dropped together"
    await asyncio.gather(*streams)
    await asyncio.sleep(1.0)
    load.stop = True
    await caller
    await watcher
    await sampler
    after = open_fds(pid) - rest
    print(label, f"in {time.monotonic() - started:.1f} s")
    print(f"released streams: {len(load.release_ms)}, refused (not 200): {load.refused}, failed: {load.failures}")
    print(
        "close -> release ms: p50 %.1f p99 %.1f max %.1f"
        % (percentile(load.release_ms, 0.5), percentile(load.release_ms, 0.99), max(load.release_ms or [0]))
    )
    print(
        "dead connections held (sampled every 50 ms): p50 %d p99 %d max %d; 1 s after the load: %d"
        % (percentile(load.held, 0.5), percentile(load.held, 0.99), max(load.held or [0]), max(0, after))
    )
    not_ok = {k: v for k, v in load.calls.items() if k != 200}
    print(f"concurrent client: {load.calls.get(200, 0)} answers of 200, others: {not_ok or 'none'}")
    print(
        "stalls: slowest call %.0f ms; watching stream: %d events, longest silence %.0f ms"
        % (load.slowest_call * 1000, load.watched_events, load.longest_silence * 1000)
    )


asyncio.run(main())

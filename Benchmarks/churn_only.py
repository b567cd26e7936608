"""Streams that come and go during another load, on any server: RATE streams a second opened on PATH, each held HOLD
seconds after its first event, then dropped, until SECONDS pass or SIGTERM comes (BENCHMARKS.md, issue 32's churn
during fan-out, run by Benchmarks/fanout-pairs.sh with CHURN=RATE). It sends nothing else, so the plain C fan-out
server (Benchmarks/sse-fanout/sse_server.c) takes it as the gateway does. Prints, at the end, how many streams opened,
got their first event, and failed. Only loopback; every wait is bounded in time.

Usage: churn_only.py PORT PATH RATE SECONDS HOLD
"""
import asyncio
import signal
import sys
import time


class Churn:
    def __init__(self, port: int, path: str):
        self.port = port
        self.request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode()
        self.opened = 0
        self.served = 0
        self.failed = 0

    async def stream(self, hold: float) -> None:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", self.port), 10)
        except (OSError, asyncio.TimeoutError):
            self.failed += 1
            return
        try:
            writer.write(self.request)
            data = b""
            while b"\ndata:" not in data and not data.startswith(b"data:"):
                chunk = await asyncio.wait_for(reader.read(4096), 10)
                if not chunk:
                    raise ConnectionError("closed before the first event")
                data += chunk
            self.served += 1
            await asyncio.sleep(hold)
        except (OSError, asyncio.TimeoutError, ConnectionError):
            self.failed += 1
        finally:
            writer.close()


async def main() -> None:
    port, path = int(sys.argv[1]), sys.argv[2]
    rate, seconds, hold = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    churn = Churn(port, path)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    started = time.monotonic()
    tasks = set()
    while not stop.is_set() and time.monotonic() - started < seconds:
        due = int((time.monotonic() - started) * rate)
        while churn.opened < due:
            churn.opened += 1
            task = asyncio.create_task(churn.stream(hold))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.sleep(0.005)
    for task in list(tasks):
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    elapsed = time.monotonic() - started
    print(
        f"churn: {churn.opened} streams opened in {elapsed:.1f} s ({churn.opened / elapsed:.0f}/s), "
        f"{churn.served} got their first event, {churn.failed} failed"
    )


asyncio.run(main())

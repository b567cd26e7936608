"""Opens N idle SSE clients against PORT, waits until each got its first chunk, prints the server's
RSS before/after (from /proc/PID/status), then closes them. Usage: sse_idle_clients.py PORT PID N"""
import asyncio
import sys


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def open_client(port: int):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    await writer.drain()
    data = b""
    while b": connected" not in data:
        chunk = await reader.read(4096)
        if not chunk:
            raise RuntimeError("stream closed early")
        data += chunk
    return reader, writer


async def main() -> None:
    port, pid, count = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    # Warm up the allocator and threads with a few streams first.
    warm = [await open_client(port) for _ in range(20)]
    await asyncio.sleep(0.5)
    before = rss_kib(pid)
    clients = []
    for start in range(0, count, 250):
        clients += await asyncio.gather(*(open_client(port) for _ in range(min(250, count - start))))
    await asyncio.sleep(1.0)
    after = rss_kib(pid)
    print(f"streams={count} rss_before_kib={before} rss_after_kib={after} "
          f"per_stream_kib={(after - before) / count:.1f}")
    for _, writer in clients + warm:
        writer.close()


asyncio.run(main())

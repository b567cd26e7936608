"""A TCP proxy on 127.0.0.1 that adds a fixed latency each way, in order: every chunk read from one side is written to
the other LAG_MS after it was read, chunks in the order they came, so a connection through it behaves as a link with
that one-way latency (a round trip costs 2 × LAG_MS more). Connecting to it is immediate: only data is delayed.

Usage: lag_proxy.py UPSTREAM_PORT LAG_MS   prints `proxy.port=<port>` once it listens, and runs until it is stopped.
"""

import asyncio
import signal
import socket
import sys
import time

UPSTREAM = int(sys.argv[1])
LAG = int(sys.argv[2]) / 1000


def no_delay(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def carry(reader, writer):
    # Each chunk is written LAG after it was read, in order.
    queue = asyncio.Queue()

    async def read():
        try:
            while data := await reader.read(65536):
                queue.put_nowait((time.monotonic() + LAG, data))
        finally:
            queue.put_nowait((time.monotonic() + LAG, b""))

    async def write():
        while True:
            due, data = await queue.get()
            await asyncio.sleep(max(0, due - time.monotonic()))
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.close()

    await asyncio.gather(read(), write(), return_exceptions=True)


async def serve(client_reader, client_writer):
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", UPSTREAM)
    except OSError:
        client_writer.close()
        return
    no_delay(client_writer)
    no_delay(upstream_writer)
    await asyncio.gather(
        carry(client_reader, upstream_writer), carry(upstream_reader, client_writer), return_exceptions=True)


async def main():
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(f"proxy.port={server.sockets[0].getsockname()[1]}", flush=True)
    await stop


asyncio.run(main())

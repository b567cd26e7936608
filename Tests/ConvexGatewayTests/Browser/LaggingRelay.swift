/// A TCP relay on 127.0.0.1 that delays what the upstream sends by a fixed time, in order: put between a gateway
/// replica and the deployment, it makes the replica's view of the database lag behind the deployment's, as a replica
/// further away would (its live query results change that much later than the commits behind them).
enum LaggingRelay {
    /// Starts the relay to `upstream` (a port on 127.0.0.1) with `lag` on the way back, runs `body` with its port,
    /// then stops it.
    static func run<T: Sendable>(upstream: Int, lag: Duration, _ body: (Int) async throws -> T) async throws -> T {
        let milliseconds = lag.components.seconds * 1000 + lag.components.attoseconds / 1_000_000_000_000_000
        return try await PythonHelper.run(
            "relay", script: script, arguments: [String(upstream), String(milliseconds)], body)
    }

    /// `python -c script <upstream port> <lag in milliseconds>`
    static let script = """
        import asyncio, signal, sys, time

        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        UPSTREAM = int(sys.argv[1])
        LAG = int(sys.argv[2]) / 1000


        async def carry(reader, writer, lag):
            # Each chunk is written `lag` after it was read, in order: a link with that one-way latency.
            queue = asyncio.Queue()

            async def read():
                while data := await reader.read(65536):
                    queue.put_nowait((time.monotonic() + lag, data))
                queue.put_nowait((0, b""))

            async def write():
                while True:
                    due, data = await queue.get()
                    if not data:
                        break
                    await asyncio.sleep(max(0, due - time.monotonic()))
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
            await asyncio.gather(
                carry(client_reader, upstream_writer, 0), carry(upstream_reader, client_writer, LAG),
                return_exceptions=True)


        async def main():
            server = await asyncio.start_server(serve, "127.0.0.1", 0)
            print(f"relay.port={server.sockets[0].getsockname()[1]}", flush=True)
            await server.serve_forever()


        asyncio.run(main())
        """
}

import TestSupport

/// The network between the gateway replicas and the deployment, as a TCP relay on 127.0.0.1 the test can cut: a
/// request for `/__cut` on the relay's own port closes every connection it carries at once (both ways), as a network
/// failure or a restarted load balancer in front of Convex would. The replicas connect again through it.
enum UpstreamLink {
    /// Starts the relay to `upstream` (a port on 127.0.0.1), runs `body` with its port, then stops it.
    static func run<T: Sendable>(upstream: Int, _ body: (Int) async throws -> T) async throws -> T {
        try await PythonHelper.run("link", script: script, arguments: [String(upstream)], body)
    }

    /// Cuts every connection the relay on `port` carries; returns how many it cut.
    @available(*, noasync)
    static func cut(port: Int) throws -> Int {
        let answer = try RawConnection.request("GET", "/__cut", port: port)
        guard answer.status == 200, let count = Int(answer.text) else {
            throw TestFailure("the upstream link did not cut: \(answer.status) \(answer.text)")
        }
        return count
    }

    /// `python -c script <upstream port>`
    static let script = """
        import asyncio, signal, sys

        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        UPSTREAM = int(sys.argv[1])
        CARRIED = set()


        async def carry(reader, writer):
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except OSError:
                pass
            writer.close()


        async def serve(client_reader, client_writer):
            first = await client_reader.read(65536)
            if first.startswith(b"GET /__cut "):
                cut = len(CARRIED) // 2
                for writer in list(CARRIED):
                    writer.transport.abort()
                CARRIED.clear()
                body = str(cut).encode()
                client_writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n%s" % (len(body), body))
                await client_writer.drain()
                client_writer.close()
                return
            try:
                upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", UPSTREAM)
            except OSError:
                client_writer.close()
                return
            CARRIED.update({client_writer, upstream_writer})
            upstream_writer.write(first)
            await asyncio.gather(
                carry(client_reader, upstream_writer), carry(upstream_reader, client_writer), return_exceptions=True)
            CARRIED.discard(client_writer)
            CARRIED.discard(upstream_writer)


        async def main():
            server = await asyncio.start_server(serve, "127.0.0.1", 0)
            print(f"link.port={server.sockets[0].getsockname()[1]}", flush=True)
            await server.serve_forever()


        asyncio.run(main())
        """
}

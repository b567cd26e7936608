/// A load balancer for tests: an HTTP/1.1 proxy on 127.0.0.1 that sends each request to the next upstream in turn,
/// whatever connection it came on, so two requests in a row never reach the same gateway replica. Requests and
/// answers go through unchanged (every `Convex-*`, CORS and caching header) but for hop-by-hop headers; each answer
/// gains `X-Replica: <index of the upstream>`. Answers are read whole before they are sent on: no event streams.
enum RoundRobinProxy {
    /// Starts the proxy in front of `upstreams` (ports on 127.0.0.1), runs `body` with its port, then stops it.
    static func run<T: Sendable>(upstreams: [Int], _ body: (Int) async throws -> T) async throws -> T {
        try await PythonHelper.run("proxy", script: script, arguments: upstreams.map(String.init), body)
    }

    /// `python -c script <upstream port>…`
    static let script = """
        import http.client, signal, sys, threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        UPSTREAMS = [int(port) for port in sys.argv[1:]]
        HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
                      "host", "content-length"}
        lock = threading.Lock()
        sent = [0]

        class Proxy(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes: with Nagle's algorithm, the body waits for a delayed ACK.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with lock:
                    index = sent[0] % len(UPSTREAMS)
                    sent[0] += 1
                upstream = http.client.HTTPConnection("127.0.0.1", UPSTREAMS[index], timeout=60)
                try:
                    upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                    # The page's Host, as a balancer passes it (HAProxy does): the replicas judge the page's Origin
                    # against it.
                    upstream.putheader("Host", self.headers.get("Host") or f"127.0.0.1:{UPSTREAMS[index]}")
                    for name, value in self.headers.items():
                        if name.lower() not in HOP_BY_HOP:
                            upstream.putheader(name, value)
                    if body or self.command in ("POST", "PUT", "PATCH"):
                        upstream.putheader("Content-Length", str(len(body)))
                    upstream.endheaders(body)
                    answer = upstream.getresponse()
                    data = answer.read()
                    headers = answer.getheaders()
                    # A HEAD answer announces the length of the body a GET would get.
                    length = answer.getheader("Content-Length") if self.command == "HEAD" else str(len(data))
                    status = answer.status
                except Exception as error:
                    status, headers = 502, [("Content-Type", "text/plain")]
                    data = f"round-robin proxy: upstream {UPSTREAMS[index]}: {error}".encode()
                    length = str(len(data))
                finally:
                    upstream.close()
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("X-Replica", str(index))
                if status not in (204, 304) and length is not None:
                    self.send_header("Content-Length", length)
                self.end_headers()
                if self.command != "HEAD" and status not in (204, 304):
                    self.wfile.write(data)

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = forward

        server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
        server.daemon_threads = True
        print(f"proxy.port={server.server_address[1]}", flush=True)
        server.serve_forever()
        """
}

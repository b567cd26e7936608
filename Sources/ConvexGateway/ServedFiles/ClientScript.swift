import HTTPFields

/// `GET /client.js`: the browser client, one ES module made of the modules in `Resources/client/` (each with its node
/// tests in Tests/ClientScriptTests/). SwiftPM embeds the files in the binary at build time, so the installed
/// executable and the container image serve it with no resource files beside them.
enum ClientScript {
    /// The modules in the order they are joined: each only imports (`import … from "./…";`, one line) from those before
    /// it, so the joined file drops those lines and keeps every `export`.
    static let modules: [(name: String, text: [UInt8])] = [
        ("errors.js", PackageResources.errors_js), ("event-stream.js", PackageResources.event_stream_js),
        ("authentication.js", PackageResources.authentication_js), ("values.js", PackageResources.values_js),
        ("patching.js", PackageResources.patching_js), ("callbacks.js", PackageResources.callbacks_js),
        ("paginated-pages.js", PackageResources.paginated_pages_js),
        ("paginated-state.js", PackageResources.paginated_state_js),
        ("paginated-query.js", PackageResources.paginated_query_js), ("optimistic.js", PackageResources.optimistic_js),
        ("backoff.js", PackageResources.backoff_js), ("calls.js", PackageResources.calls_js),
        ("request-queue.js", PackageResources.request_queue_js), ("live-queries.js", PackageResources.live_queries_js),
        ("connection.js", PackageResources.connection_js), ("gateway.js", PackageResources.gateway_js),
    ]

    static let body: [UInt8] = join(modules.map(\.text))

    /// The modules as one file, their relative imports left out.
    static func join(_ modules: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for module in modules {
            for line in module.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            where !isRelativeImport(line) {
                out += line
                out.append(UInt8(ascii: "\n"))
            }
        }
        return out
    }

    private static func isRelativeImport(_ line: ArraySlice<UInt8>) -> Bool {
        line.starts(with: "import ".utf8) && String(decoding: line, as: UTF8.self).contains(#" from "./"#)
    }

    /// The script, served as ``EmbeddedFile``: revalidated on each use, so a page always runs the client of the
    /// gateway it talks to.
    static let file = EmbeddedFile(body: body, contentType: "text/javascript; charset=utf-8", etagPrefix: "client")

    static var response: GatewayResponse { file.response }
}

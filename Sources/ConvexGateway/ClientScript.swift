/// `GET /client.js`: the browser client (`Resources/client.js`). SwiftPM embeds the file in the binary at build
/// time, so the installed executable and the container image serve it with no resource files beside them.
enum ClientScript {
    static let body: [UInt8] = PackageResources.client_js

    /// A strong validator from the content: the same build answers the same ETag in every process.
    static let etag: String = {
        var hash = FNV1a()
        hash.combine(body)
        return "\"client-" + String(hash.value, radix: 16) + "\""
    }()

    /// The script, or a 304 when `If-None-Match` names its ETag. Browsers keep it but revalidate on each use
    /// (`no-cache`), so a page always runs the client of the gateway it talks to.
    static func response(ifNoneMatch: String?) -> GatewayResponse {
        let headers = [
            ("Content-Type", "text/javascript; charset=utf-8"), ("ETag", etag), ("Cache-Control", "no-cache"),
            ("X-Content-Type-Options", "nosniff"),
        ]
        if let ifNoneMatch, matches(ifNoneMatch) {
            return GatewayResponse(status: 304, headers: Array(headers.dropFirst()), body: [])
        }
        return GatewayResponse(status: 200, headers: headers, body: body)
    }

    /// Whether an `If-None-Match` list (`"a", W/"b"` or `*`) names the script's ETag; weak comparison, as RFC 9110
    /// asks for `If-None-Match`.
    static func matches(_ ifNoneMatch: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { item in
            var tag = item.trimmingCharacters(in: .whitespaces)[...]
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            return tag == "*" || tag == etag
        }
    }
}

import HTTPFields
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

    /// The script; `If-None-Match` naming its ETag gets a 304 when the request completes (ConditionalGetAndGzip/).
    /// Browsers keep it but revalidate on each use (`no-cache`), so a page always runs the client of the gateway it
    /// talks to.
    static var response: GatewayResponse {
        GatewayResponse(
            status: 200,
            headers: [
                ("Content-Type", "text/javascript; charset=utf-8"), ("ETag", etag), ("Cache-Control", "no-cache"),
                ("X-Content-Type-Options", "nosniff"),
            ],
            body: body)
    }
}

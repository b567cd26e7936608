import HTTPFields

/// A file built into the binary and served as it is (`/client.js`, the demo page): SwiftPM embeds it at build time, so
/// the installed executable and the container image serve it with no resource files beside them.
struct EmbeddedFile: Sendable {
    /// A strong validator from the content: the same build answers the same ETag in every process.
    let etag: String
    /// The file, made once; `If-None-Match` naming its ETag gets a 304 when the request completes
    /// (ConditionalGetAndGzip/). Browsers keep it but revalidate on each use (`no-cache`), so a page gets the file of the
    /// gateway it talks to. `extraHeaders` go beyond the content's own (a page's `Content-Security-Policy`). Its
    /// gzip-coded body is made once too: a revalidation's 304 gives the coded length.
    let response: GatewayResponse

    init(body: [UInt8], contentType: String, etagPrefix: String, extraHeaders: [(String, String)] = []) {
        var hasher = ContentHasher()
        hasher.combine(body)
        etag = "\"\(etagPrefix)-" + hasher.hash.text + "\""
        response = GatewayResponse(
            status: 200,
            headers: [
                (HeaderName.contentType, contentType), (HeaderName.eTag, etag), (HeaderName.cacheControl, "no-cache"),
                (HeaderName.xContentTypeOptions, "nosniff"),
            ] + extraHeaders,
            body: body, gzipped: body.count >= ContentCoding.minimumBytes ? ContentCoding.gzip(body) : nil)
    }
}

import HTTPFields

/// What a request says about the representation it wants: whether it takes gzip, and the entity tags it holds.
/// The one completion (Pipeline/Finish.swift) and the hot path, with the same rules, pick the response's representation from it.
struct RepresentationPreferences: Sendable {
    /// `Accept-Encoding` accepts gzip (HTTPFields' ``AcceptEncoding``).
    var acceptsGzip = false
    /// `If-None-Match` of a `GET` or `HEAD` (other methods ignore it: none of their answers carries an `ETag`).
    var ifNoneMatch: String?

    static let identity = RepresentationPreferences()

    init(acceptsGzip: Bool = false, ifNoneMatch: String? = nil) {
        self.acceptsGzip = acceptsGzip
        self.ifNoneMatch = ifNoneMatch
    }

    init(method: String, header: (String) -> String?) {
        acceptsGzip = AcceptEncoding.acceptsGzip(header(HeaderName.acceptEncoding))
        ifNoneMatch = method == "GET" || method == "HEAD" ? header(HeaderName.ifNoneMatch) : nil
    }
}

extension GatewayResponse {
    /// The representation of this response that a request with `preferences` gets:
    /// - a body from 1 KiB varies by `Accept-Encoding` (`Vary`), and is gzip-coded when the request accepts gzip;
    ///   its `ETag` then names the gzip variant (``EntityTag/gzipVariant(of:)``);
    /// - a 200 with an `ETag` that `If-None-Match` names (either variant) becomes a 304 with the same headers, less
    ///   its `Content-Type`. It keeps the body the 200 would send, which libmicrohttpd never sends with a 304 but
    ///   counts in its `Content-Length`: that must be the 200's length (RFC 9110 §8.6), not 0.
    ///
    /// - Parameter compressed: the gzip-coded body, asked for only when it is sent (the hot path keeps one per value).
    func negotiated(_ preferences: RepresentationPreferences, compressed: () -> [UInt8]?) -> GatewayResponse {
        let compressible = body.count >= ContentCoding.minimumBytes && header(HeaderName.contentEncoding) == nil
        let etag = status == 200 ? header(HeaderName.eTag) : nil
        guard compressible || (etag != nil && preferences.ifNoneMatch != nil) else { return self }
        let gzip = compressible && preferences.acceptsGzip
        var response = self
        if compressible { response.headers.append((HeaderName.vary, HeaderName.acceptEncoding)) }
        if let etag, let ifNoneMatch = preferences.ifNoneMatch, EntityTag.ifNoneMatch(ifNoneMatch, matches: etag) {
            if gzip {
                response.setHeader(HeaderName.eTag, EntityTag.gzipVariant(of: etag))
                if let coded = compressed() { response.body = coded }
            }
            response.status = 304
            response.headers.removeAll { $0.0.lowercased() == HeaderName.contentType.lowercased() }
            return response
        }
        if gzip, let coded = compressed() {
            response.body = coded
            response.headers.append((HeaderName.contentEncoding, "gzip"))
            if let etag { response.setHeader(HeaderName.eTag, EntityTag.gzipVariant(of: etag)) }
        }
        return response
    }

    /// The value of the first header named `name` (ASCII case-insensitive).
    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// Sets the first header named `name` to `value`, or adds it.
    mutating func setHeader(_ name: String, _ value: String) {
        if let index = headers.firstIndex(where: { $0.0.lowercased() == name.lowercased() }) {
            headers[index].1 = value
        } else {
            headers.append((name, value))
        }
    }
}

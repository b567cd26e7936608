import CMicroHTTPD

/// A response built once and queued on any number of requests without copying: what the hot
/// path answers with, for a hot, unchanging answer (e.g. the current value of a live query).
///
/// libmicrohttpd reference-counts the underlying response, so it may be shared across threads
/// and requests; it is released when this object and every request using it are done.
public final class HTTPPreparedResponse: Sendable {
    let status: Int
    /// The body's length in bytes (for an access log).
    public let bodyCount: Int
    private let handle: ResponseHandle

    private struct ResponseHandle: @unchecked Sendable {
        let raw: OpaquePointer
    }

    /// Builds the libmicrohttpd response (the body is copied once, here).
    /// - Throws: ``HTTPServerError/invalidResponse(_:)`` for a status outside 100...999 or a header
    ///   libmicrohttpd refuses (e.g. one containing CR or LF).
    public init(_ response: HTTPResponse) throws(HTTPServerError) {
        guard (100...999).contains(response.status) else {
            throw .invalidResponse("status \(response.status) is outside 100...999")
        }
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count,
                UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                MHD_ResponseMemoryMode.RESPMEM_MUST_COPY
            )
        }
        guard let created else { throw .invalidResponse("libmicrohttpd could not create the response") }
        for field in response.headers where MHD_add_response_header(created, field.name, field.value) != MHD_Result.YES
        {
            MHD_destroy_response(created)
            throw .invalidResponse("libmicrohttpd refused the header \"\(field.name)\"")
        }
        status = response.status
        bodyCount = response.body.count
        handle = ResponseHandle(raw: created)
    }

    deinit {
        MHD_destroy_response(handle.raw)
    }

    func queue(on connection: ConnectionHandle) -> MHD_Result {
        MHD_queue_response(connection.raw, UInt32(status), handle.raw)
    }
}

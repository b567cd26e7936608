import CMicroHTTPD
import CMicroHTTPDShim

/// A libmicrohttpd connection pointer that may cross threads. Which calls are legal from which
/// thread is libmicrohttpd's rule (resume: any thread; everything else: the connection's thread).
struct ConnectionHandle: @unchecked Sendable {
    let raw: OpaquePointer

    /// The client's address and port (cached per TCP connection); call on the connection's thread.
    var remote: (host: String, port: UInt16)? {
        guard let context = cmhd_connection_socket_context(raw) else { return nil }
        return Unmanaged<ConnectionContext>.fromOpaque(context).takeUnretainedValue().remote(of: self)
    }
}

/// Per-TCP-connection state, created in the connection-started notification and released when the
/// connection closes. Only touched on the connection's own libmicrohttpd thread, hence no lock.
final class ConnectionContext: @unchecked Sendable {
    /// The raw request-target of the request being parsed (from the URI log callback).
    var pendingTarget: String?
    /// The client address, computed on first use.
    private var cachedRemote: (host: String, port: UInt16)??

    func remote(of connection: ConnectionHandle) -> (host: String, port: UInt16)? {
        if let cachedRemote { return cachedRemote }
        var result: (host: String, port: UInt16)?
        if let address = cmhd_connection_client_address(connection.raw) {
            var buffer = [CChar](repeating: 0, count: 64)
            var port: UInt16 = 0
            if cmhd_format_sockaddr(address, &buffer, buffer.count, &port) == 1 {
                let host = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                result = (host, port)
            }
        }
        cachedRemote = .some(result)
        return result
    }
}

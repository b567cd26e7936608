import CMicroHTTPD
import CMicroHTTPDShim
import Glibc

/// A libmicrohttpd connection pointer that may cross threads. Which calls are legal from which
/// thread is libmicrohttpd's rule (resume: any thread; everything else: the connection's thread).
struct ConnectionHandle: @unchecked Sendable {
    let raw: OpaquePointer

    /// The client's address and port (cached per TCP connection); call on the connection's thread.
    var remote: (host: String, port: UInt16)? {
        context?.remote(of: self)
    }

    /// The connection's context, if libmicrohttpd has one for it (it does from the connection-started notification).
    var context: ConnectionContext? {
        cmhd_connection_socket_context(raw).map { Unmanaged<ConnectionContext>.fromOpaque($0).takeUnretainedValue() }
    }

    /// The raw request-target of the request being parsed (from the URI log callback), handed over once.
    func takePendingTarget() -> String? {
        guard let context else { return nil }
        defer { context.pendingTarget = nil }
        return context.pendingTarget
    }
}

/// Per-TCP-connection state, created in the connection-started notification and released when the
/// connection closes. The `var`s are only touched on the connection's own libmicrohttpd thread, hence no lock; the
/// ``ConnectionGuard``'s thread reads the `let`s and shares ``deadline`` under its lock.
final class ConnectionContext: @unchecked Sendable {
    /// The client's address as its shares are counted: only when a per-address share is configured
    /// (``ConnectionGuard``).
    let addressKey: ClientAddressKey?
    /// The connection's socket, for the answers the ``ConnectionGuard`` writes itself; -1 without a guard.
    let socket: Int32
    /// Whether the connection counts against its address's share of connections (given back when it closes).
    let countsForAddress: Bool
    /// The connection's deadlines against slow clients, and whether the server refused it itself; `nil` when no
    /// guard against slow clients or per-address connections is configured.
    let deadline: POSIXLocked<ConnectionDeadline>?
    /// The raw request-target of the request being parsed (from the URI log callback).
    var pendingTarget: String?
    /// Where that target lies in libmicrohttpd's read buffer, until its head is checked (``HeadAccounting``).
    var pendingTargetBytes: HeadAccounting.Target?
    /// The ``AcceptStallWatchdog`` tick of the accept, until the first request line arrives.
    var acceptedTick: UInt64?
    /// The connection is the ``AcceptStallWatchdog``'s wake-up, not a client's: the connection count leaves it out.
    var isWatchdogPoke = false
    /// What the hot path keeps with this connection between its requests (``HTTPRequestHead/connectionMemo``).
    var hotPathMemo: AnyObject?
    /// The previous request's target: a keep-alive client often asks for the same one again, which then costs no
    /// new `String`.
    private var lastTarget: String?
    /// The client address, computed on first use.
    private var cachedRemote: (host: String, port: UInt16)??

    init(
        addressKey: ClientAddressKey? = nil, socket: Int32 = -1, countsForAddress: Bool = false,
        deadline: POSIXLocked<ConnectionDeadline>? = nil
    ) {
        self.addressKey = addressKey
        self.socket = socket
        self.countsForAddress = countsForAddress
        self.deadline = deadline
    }

    /// Records the request-target libmicrohttpd reports (a C string) as ``pendingTarget``.
    func noteTarget(_ uri: UnsafePointer<CChar>) {
        let length = strlen(uri)
        pendingTargetBytes = HeadAccounting.Target(uri, count: length)
        if let lastTarget, lastTarget.utf8.count == length,
            lastTarget.utf8.withContiguousStorageIfAvailable({
                length == 0 || memcmp($0.baseAddress!, uri, length) == 0
            }) == true
        {
            pendingTarget = lastTarget
            return
        }
        let target = String(cString: uri)
        lastTarget = target
        pendingTarget = target
    }

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

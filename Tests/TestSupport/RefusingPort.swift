import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with a loopback port that refuses every connection for as long as `body` runs: a socket bound to it
/// that never listens holds the port, so no other server of a parallel run can take it, and a connection to it is
/// refused at once. The port is below the kernel's ephemeral range (``portBelowTheEphemeralRange()``), so a test may
/// hand it to a server of its own once `body` has returned.
public func withRefusingPort<T>(_ body: (_ port: Int) async throws -> T) async throws -> T {
    let (fd, port) = try bindBelowTheEphemeralRange()
    defer { close(fd) }
    return try await body(port)
}

/// A loopback port that was free a moment ago, for a server that must come back on the same port (a restart). It is
/// below the kernel's ephemeral range (32768 and up), where every outgoing connection of a parallel run and every
/// server on port 0 takes its port, so none of them can take it meanwhile; only another test picking the same port of
/// the 12,000 could.
public func portBelowTheEphemeralRange() throws -> Int {
    let (fd, port) = try bindBelowTheEphemeralRange()
    close(fd)
    return port
}

/// A socket bound (not listening) to a random free loopback port in 20000..<32768.
private func bindBelowTheEphemeralRange() throws -> (fd: Int32, port: Int) {
    for _ in 0..<200 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
        let port = Int.random(in: 20000..<32768)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        if bound { return (fd, port) }
        let error = errno
        close(fd)
        guard error == EADDRINUSE else { throw TestFailure("bind() to 127.0.0.1:\(port) failed: errno \(error)") }
    }
    throw TestFailure("no free port in 20000..<32768 after 200 tries")
}

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with a loopback port that refuses every connection for as long as `body` runs: a socket bound to it
/// that never listens holds the port, so no other server of a parallel run can take it (a port that was free a moment
/// ago may not be), and a connection to it is refused at once.
public func withRefusingPort<T>(_ body: (_ port: Int) async throws -> T) async throws -> T {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard bound else { throw TestFailure("bind() to 127.0.0.1:0 failed: errno \(errno)") }
    return try await body(Int(UInt16(bigEndian: address.sin_port)))
}

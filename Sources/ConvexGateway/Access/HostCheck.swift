import Foundation
import HTTPFields

extension GatewayError {
    static let missingHost = GatewayError(
        code: .missingHost, message: "The request has no Host header; every HTTP/1.1 request must send one")

    static func hostNotAllowed(_ host: String) -> GatewayError {
        GatewayError(
            code: .hostNotAllowed,
            message:
                "Host '\(printable(host))' is not one this gateway answers for; a gateway listening on a loopback "
                + "address answers only loopback names (localhost, 127.0.0.1, [::1]) unless --allowed-hosts lists "
                + "others")
    }
}

/// Which `Host` values the gateway answers, against DNS rebinding: a page on another site whose name the attacker
/// points at 127.0.0.1 reaches a local gateway as its own origin, so the browser lets it read the answers. Its requests
/// still carry that name in `Host`, so a gateway that answers only the names it is known by is out of its reach (as
/// Jupyter and Vite do).
///
/// - A request without `Host` gets 400 `MissingHost`.
/// - With `--allowed-hosts`, only those names (and loopback names) are answered; `*` in the list answers any.
/// - Without it, a gateway listening on a loopback address answers only loopback names: `localhost` and names under
///   `.localhost`, `127.x.x.x` and `[::1]`; a gateway listening on any other address answers any name.
///
/// Anything else gets 403 `HostNotAllowed`. Names are compared without their port, ignoring case and a final dot.
struct HostCheck: Sendable {
    /// Allowed names besides the loopback ones, lower-cased.
    let names: Set<String>
    /// Any name is answered (a public address without a list, or `*` in it).
    let anyName: Bool

    /// The check of a gateway listening on `listenHost` (`nil`: none known, any name) with `allowedHosts`.
    init(allowedHosts: [String], listenHost: String?) {
        let lowered = allowedHosts.map { Self.normalized($0) }
        names = Set(lowered.filter { $0 != "*" })
        if lowered.contains("*") {
            anyName = true
        } else if lowered.isEmpty {
            anyName = !(listenHost.map(Self.isLoopback) ?? false)
        } else {
            anyName = false
        }
    }

    /// Why a request with this `Host` field is refused; `nil` when it is answered. A loopback name is read in place
    /// (``HostField/namesLoopback(_:)``: the hot path asks this on every `GET`).
    func refusal(_ field: FieldValue?) -> GatewayError? {
        guard let field else { return .missingHost }
        if anyName || HostField.namesLoopback(field) { return nil }
        if !names.isEmpty, names.contains(Self.normalized(Self.withoutPort(field.text))) { return nil }
        return .hostNotAllowed(field.text)
    }

    /// Whether `host` (a name or numeric address, without port) names this machine's loopback interface.
    static func isLoopback(_ host: String) -> Bool {
        FieldValue.of(host) { HostField.namesLoopback($0) }
    }

    /// `host[:port]` or `[v6][:port]` without the port.
    static func withoutPort(_ host: String) -> String {
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") { return String(host[...close]) }
        guard let colon = host.lastIndex(of: ":") else { return host }
        // More than one colon without brackets: an IPv6 address as it is.
        return host[..<colon].contains(":") ? host : String(host[..<colon])
    }

    private static func normalized(_ host: String) -> String {
        var host = host.trimmingCharacters(in: .whitespaces).lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        return host
    }
}

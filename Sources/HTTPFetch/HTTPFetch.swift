import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// One HTTP/1.1 request over SwiftNIO, TLS by NIOSSL with the system's trust roots: the package's few plain fetches (a
/// deployment's function spec, an auth provider's keys) without FoundationNetworking, and so without libcurl.
///
/// Redirects (301, 302, 303, 307, 308) are followed up to five times; a 303, or a 301/302 answering a POST, turns the
/// request into a body-less GET, as browsers do. The whole exchange, redirects included, is bounded by `timeout`, and
/// the body by `maxBodyBytes`. `tls` replaces the default client configuration (full verification against the
/// system's trust roots) for https URLs.
package func httpFetch(
    _ method: HTTPMethod = .GET,
    _ url: String,
    headers: [(String, String)] = [],
    body: [UInt8]? = nil,
    timeout: Duration = .seconds(10),
    maxBodyBytes: Int = 8 << 20,
    tls: TLSConfiguration? = nil
) async throws(HTTPFetchError) -> HTTPFetchResponse {
    let host = URLComponents(string: url)?.host ?? url
    do {
        return try await withThrowingTaskGroup(of: HTTPFetchResponse.self) { group in
            group.addTask {
                var request = FetchTarget.Request(method: method, url: url, headers: headers, body: body)
                let tlsContext = try tls.map { try NIOSSLContext(configuration: $0) }
                for _ in 0...5 {
                    let response = try await fetchOnce(
                        request, tlsContext: tlsContext, connectTimeout: timeout, maxBodyBytes: maxBodyBytes)
                    guard let next = request.following(response) else { return response }
                    request = next
                }
                throw HTTPFetchError.tooManyRedirects(url)
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw HTTPFetchError.timedOut(host, after: timeout)
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw HTTPFetchError.timedOut(host, after: timeout) }
            return first
        }
    } catch let error as HTTPFetchError {
        throw error
    } catch {
        throw .connectionFailed(host, error)
    }
}

/// Where a request goes: scheme, host, port and request target, parsed from an absolute http(s) URL.
struct FetchTarget: Sendable {
    var tls: Bool
    var host: String
    var port: Int
    var hostHeader: String
    var requestTarget: String

    init(_ url: String) throws(HTTPFetchError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else {
            throw .badURL(url)
        }
        tls = scheme == "https"
        // URLComponents keeps an IPv6 literal's brackets in `host` on some platforms and not on others.
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.host = bare
        port = components.port ?? (tls ? 443 : 80)
        let hostField = bare.contains(":") ? "[\(bare)]" : bare
        hostHeader = components.port == nil ? hostField : "\(hostField):\(port)"
        var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?\(query)" }
        requestTarget = target
    }

    struct Request: Sendable {
        var method: HTTPMethod
        var url: String
        var headers: [(String, String)]
        var body: [UInt8]?

        /// The request a redirect asks for, or nil when the response is not one.
        func following(_ response: HTTPFetchResponse) -> Request? {
            guard [301, 302, 303, 307, 308].contains(response.status), let location = response.header("Location"),
                let base = URL(string: url), let next = URL(string: location, relativeTo: base)?.absoluteString
            else {
                return nil
            }
            var request = self
            request.url = next
            if response.status == 303 || (method == .POST && (response.status == 301 || response.status == 302)) {
                request.method = .GET
                request.body = nil
                request.headers.removeAll { $0.0.lowercased() == "content-type" }
            }
            return request
        }
    }
}

/// The TLS context every fetch shares (loading the trust roots once).
private let sharedTLSContext: Result<NIOSSLContext, any Error> = Result {
    try NIOSSLContext(configuration: .makeClientConfiguration())
}

/// One exchange. A connection attempt is not cancellable, hence bounded by itself; the rest ends with the task.
private func fetchOnce(
    _ request: FetchTarget.Request, tlsContext: NIOSSLContext?, connectTimeout: Duration, maxBodyBytes: Int
) async throws -> HTTPFetchResponse {
    let target = try FetchTarget(request.url)
    let tlsContext = target.tls ? try tlsContext ?? sharedTLSContext.get() : nil
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .connectTimeout(TimeAmount(connectTimeout))
        .connect(host: target.host, port: target.port) { channel in
            channel.eventLoop.makeCompletedFuture {
                let sync = channel.pipeline.syncOperations
                if let tlsContext {
                    let handler: NIOSSLClientHandler
                    do {
                        handler = try NIOSSLClientHandler(context: tlsContext, serverHostname: target.host)
                    } catch let error as NIOSSLExtraError where error == .cannotUseIPAddressInSNI {
                        handler = try NIOSSLClientHandler(context: tlsContext, serverHostname: nil)
                    }
                    try sync.addHandler(handler)
                }
                try sync.addHTTPClientHandlers()
                return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                    wrappingChannelSynchronously: channel)
            }
        }
    return try await channel.executeThenClose { inbound, outbound in
        var headers = HTTPHeaders(request.headers)
        headers.replaceOrAdd(name: "Host", value: target.hostHeader)
        headers.replaceOrAdd(name: "Connection", value: "close")
        if let body = request.body {
            headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
        }
        let requestHead = HTTPRequestHead(
            version: .http1_1, method: request.method, uri: target.requestTarget, headers: headers)
        try await outbound.write(.head(requestHead))
        if let body = request.body {
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
        }
        try await outbound.write(.end(nil))

        var head: HTTPResponseHead?
        var body: [UInt8] = []
        for try await part in inbound {
            switch part {
            case .head(let responseHead):
                head = responseHead
                body = []
            case .body(let buffer):
                guard body.count + buffer.readableBytes <= maxBodyBytes else {
                    throw HTTPFetchError.bodyTooLarge(target.host, limit: maxBodyBytes)
                }
                body.append(contentsOf: buffer.readableBytesView)
            case .end:
                if let head {
                    return HTTPFetchResponse(status: Int(head.status.code), headers: head.headers, body: body)
                }
            }
        }
        throw HTTPFetchError.connectionFailed(target.host, ChannelError.eof)
    }
}

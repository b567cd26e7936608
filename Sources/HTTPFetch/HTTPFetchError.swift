/// Why an ``httpFetch(_:_:headers:body:timeout:maxBodyBytes:)`` failed. The description names the URL's host and the
/// cause, never a header or body of the request (they may hold a key).
package struct HTTPFetchError: Error, Sendable, CustomStringConvertible {
    private enum Code: Sendable {
        case badURL
        case connectionFailed
        case timedOut
        case bodyTooLarge
        case tooManyRedirects
    }

    private let code: Code
    package let description: String

    private init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }

    static func badURL(_ url: String) -> Self {
        .init(.badURL, "'\(url)' is not an absolute http or https URL")
    }

    static func connectionFailed(_ host: String, _ cause: any Error) -> Self {
        .init(.connectionFailed, "the request to \(host) failed: \(cause)")
    }

    static func timedOut(_ host: String, after timeout: Duration) -> Self {
        .init(.timedOut, "\(host) did not answer within \(timeout)")
    }

    static func bodyTooLarge(_ host: String, limit: Int) -> Self {
        .init(.bodyTooLarge, "the answer of \(host) is larger than \(limit) bytes")
    }

    static func tooManyRedirects(_ url: String) -> Self {
        .init(.tooManyRedirects, "too many redirects from '\(url)'")
    }
}

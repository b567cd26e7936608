import ConvexValues
import HTTPFields

/// A complete response.
package struct GatewayResponse: Sendable {
    package var status: Int
    package var headers: [(String, String)]
    package var body: [UInt8]
    /// `body` gzip-coded, when it was made once for every request (an embedded file); `nil`: coded when sent.
    package var gzipped: [UInt8]?

    package init(status: Int, headers: [(String, String)] = [], body: [UInt8], gzipped: [UInt8]? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.gzipped = gzipped
    }

    static func json(_ body: [UInt8], status: Int = 200) -> GatewayResponse {
        GatewayResponse(status: status, headers: [(HeaderName.contentType, "application/json")], body: body)
    }

    /// The one place an error becomes status, headers and the JSON error body (`data` rendered by `render`).
    static func error(_ error: GatewayError, render: (ConvexValue) -> [UInt8]) -> GatewayResponse {
        GatewayResponse(
            status: error.status, headers: [(HeaderName.contentType, "application/json")] + error.headers,
            body: error.body(render: render))
    }
}

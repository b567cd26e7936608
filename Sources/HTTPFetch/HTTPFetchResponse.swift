import NIOHTTP1

/// The answer to one ``httpFetch(_:_:headers:body:timeout:maxBodyBytes:)``: status, headers and the whole body.
package struct HTTPFetchResponse: Sendable {
    package var status: Int
    package var headers: HTTPHeaders
    package var body: [UInt8]

    /// The first value of a header, by case-insensitive name.
    package func header(_ name: String) -> String? { headers.first(name: name) }

    /// The standard reason phrase of the status (`Not Found` for 404).
    package var reasonPhrase: String { HTTPResponseStatus(statusCode: status).reasonPhrase }
}

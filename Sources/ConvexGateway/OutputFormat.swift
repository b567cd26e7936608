import ConvexValues

/// How the gateway renders Convex values in responses, chosen per request with `?format=`: the value layer's
/// output modes (`plain`, `clean`, `encoded`).
public typealias OutputFormat = ConvexOutputMode

extension ConvexOutputMode {
    /// Reads a `format` query parameter.
    package init(parameter: String) throws(GatewayError) {
        guard let format = ConvexOutputMode(rawValue: parameter) else {
            throw GatewayError.badRequest(
                "Unknown format '\(printable(parameter))'; use one of plain, clean, encoded", code: .invalidFormat)
        }
        self = format
    }
}

import ConvexValues

/// How the gateway renders Convex values in responses is chosen per request with `?format=`: one of the value
/// layer's output formats (`plain`, `clean`, `encoded`; ConvexValues/OutputFormat.swift).
extension OutputFormat {
    /// Reads a `format` query parameter.
    package init(parameter: String) throws(GatewayError) {
        guard let format = OutputFormat(rawValue: parameter) else {
            throw GatewayError.badRequest(
                "Unknown format '\(printable(parameter))'; use one of plain, clean, encoded", code: .invalidFormat)
        }
        self = format
    }
}

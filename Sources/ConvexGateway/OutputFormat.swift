/// How the gateway renders Convex values in responses, chosen per request with `?format=`.
public enum OutputFormat: String, Sendable, Hashable, CaseIterable {
    /// Plain JSON: int64 as an exact JSON integer, special floats as strings, bytes as base64.
    case plain
    /// Exactly Convex's own `format=json`: int64 as a decimal string.
    case clean
    /// Convex JSON unchanged (`$integer`, `$float`, `$bytes` wrappers).
    case encoded

    public init(parameter: String) throws(GatewayError) {
        guard let format = OutputFormat(rawValue: parameter) else {
            throw GatewayError.badRequest(
                "Unknown format '\(printable(parameter))'; use one of plain, clean, encoded", code: .invalidFormat)
        }
        self = format
    }
}

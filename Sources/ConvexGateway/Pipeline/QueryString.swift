import ConvexSyncProtocol

/// The query string, percent-decoded once, strictly: every name and value must decode to UTF-8 text (with `+` as a
/// space, as forms send it). Values stay text here; the argument stage decides what each one means.
struct QueryString: Sendable, Equatable {
    struct Parameter: Sendable, Equatable {
        var name: String
        /// `nil` for a bare `name` without `=`.
        var value: String?
    }

    var parameters: [Parameter]

    init(_ parameters: [Parameter] = []) {
        self.parameters = parameters
    }

    /// Decodes the raw query (after `?`, still percent-encoded). Empty `&&` items are skipped.
    /// - Parameter naming: adds to the error about a parameter (given its name) what else it concerns: the parse stage
    ///   names the subscription of a multi-subscription stream that a `sub.<id>` or `args.<id>` belongs to.
    /// - Throws: 400 naming the first parameter that is not UTF-8 once decoded, or that has a malformed escape.
    init(
        raw: Substring?, naming: (_ error: GatewayError, _ parameter: String) -> GatewayError = { error, _ in error }
    ) throws(GatewayError) {
        var parameters: [Parameter] = []
        guard let raw, !raw.isEmpty else {
            self.init(parameters)
            return
        }
        for item in raw.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = item.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let shownName = String(
                decoding: PercentDecoding.decode(parts[0], plusIsSpace: true) ?? Array(parts[0]), as: UTF8.self)
            func text(_ part: Substring.UTF8View.SubSequence) throws(GatewayError) -> String {
                guard let bytes = PercentDecoding.decode(part, plusIsSpace: true) else {
                    throw GatewayError.badRequest(
                        "Query parameter '\(printable(shownName))' has a malformed percent-escape; write % as %25",
                        code: .invalidArguments)
                }
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw GatewayError.badRequest(
                        "Query parameter '\(printable(shownName))' is not valid UTF-8 once percent-decoded",
                        code: .invalidArguments)
                }
                return text
            }
            do {
                parameters.append(
                    Parameter(name: try text(parts[0]), value: parts.count == 2 ? try text(parts[1]) : nil))
            } catch {
                throw naming(error, shownName)
            }
        }
        self.init(parameters)
    }

    /// The values given for `name`, in order.
    func values(named name: String) -> [String?] {
        parameters.filter { $0.name == name }.map(\.value)
    }
}

/// Text safe to echo in an error message: control characters and non-ASCII become `\u{…}` escapes, long text is cut.
func printable(_ text: String, limit: Int = 200) -> String {
    UdfPathError.printable(text, limit: limit)
}

/// Reading one cookie out of a `Cookie` request header (RFC 6265 §4.2: `name=value` pairs separated by `;` and
/// optional whitespace; a value may be wrapped in double quotes).
enum CookieHeader {
    /// The value of the first cookie called `name` (compared exactly, as browsers send names), without surrounding
    /// whitespace or double quotes; `nil` when there is none. Pairs without `=` are skipped.
    static func value(named name: String, in header: String?) -> Substring? {
        guard let header else { return nil }
        for pair in header.split(separator: ";") {
            if let found = value(of: pair, named: name) { return found }
        }
        return nil
    }

    /// The values of every cookie called `name`, in the order sent. A browser sends several when cookies of one name
    /// were set for different paths or domains (a sibling subdomain can set one for the parent domain).
    static func values(named name: String, in header: String?) -> [Substring] {
        guard let header else { return [] }
        return header.split(separator: ";").compactMap { value(of: $0, named: name) }
    }

    /// The value of one `name=value` pair if its name is `name`.
    private static func value(of pair: Substring, named name: String) -> Substring? {
        guard let equals = pair.firstIndex(of: "="), pair[..<equals].trimmingWhitespace() == name else { return nil }
        var value = pair[pair.index(after: equals)...].trimmingWhitespace()
        if value.count >= 2, value.first == "\"", value.last == "\"" {
            value = value.dropFirst().dropLast()
        }
        return value
    }

    /// Whether `name` can be a cookie name: an HTTP token (letters, digits and ``!#$%&'*+-.^_`|~``).
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingWhitespace() -> Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}

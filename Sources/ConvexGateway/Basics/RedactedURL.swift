/// A URL as it may be logged: without the user and password of its authority and without its query and fragment, the
/// parts that can carry a secret (`https://user:key@host/path?token=…` is logged as `https://host/path`). A deployment
/// URL has none of them, so it is logged as it was given.
package struct RedactedURL: Sendable, Hashable, CustomStringConvertible {
    package let description: String

    package init(_ url: String) {
        var text = Substring(url)
        if let end = text.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            text = text[..<end]
        }
        guard let scheme = text.firstRange(of: "://") else {
            description = String(text)
            return
        }
        let authorityEnd = text[scheme.upperBound...].firstIndex(of: "/") ?? text.endIndex
        if let at = text[scheme.upperBound..<authorityEnd].lastIndex(of: "@") {
            text = text[..<scheme.upperBound] + text[text.index(after: at)...]
        }
        description = String(text)
    }
}

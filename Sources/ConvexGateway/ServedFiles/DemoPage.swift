import Crypto
import Foundation
import HTTPFields

/// `GET /`: a page that uses `/client.js` same-origin on the embedded deployment's demo functions (the standings, live,
/// with a button that records a win; the paginated feed with "Load more" and a post box), so a newcomer who runs
/// `scripts/gateway` and opens the printed address sees live values change. Served only when the gateway runs on the
/// embedded deployment (``GatewayConfiguration/demoPage``): a real deployment has other functions.
enum DemoPage {
    static let body = PackageResources.index_html

    /// Its own script and client.js, and its one inline module and one inline style sheet by their hashes (not
    /// `'unsafe-inline'`, so markup injected into the page runs no script and no style); requests to this gateway only.
    /// The page carries no `style=` attribute and no inline event handler, which hashes do not cover.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self' \(hashSources(of: "script")); style-src \(hashSources(of: "style")); "
        + "frame-ancestors 'none'"

    static let file = EmbeddedFile(
        body: body, contentType: "text/html; charset=utf-8", etagPrefix: "demo",
        extraHeaders: [
            (HeaderName.contentSecurityPolicy, contentSecurityPolicy), (HeaderName.referrerPolicy, "no-referrer"),
        ])

    /// The CSP hash source of each inline `<tag>` element of the page, space-separated; `'none'` when there is none.
    private static func hashSources(of tag: String) -> String {
        let sources = inlineBlocks(tag, in: body).map(hashSource)
        return sources.isEmpty ? "'none'" : sources.joined(separator: " ")
    }

    /// `'sha256-<base64>'`: the source expression that allows an inline block with exactly this text (CSP level 2).
    static func hashSource(_ text: some Collection<UInt8>) -> String {
        "'sha256-" + Data(SHA256.hash(data: Array(text))).base64EncodedString() + "'"
    }

    /// The text of each `<tag …>…</tag>` element of `page` without a `src` attribute: the bytes a browser hashes to
    /// match the policy's hash sources (the page is UTF-8 with `\n` line ends, which HTML parsing leaves as they are).
    static func inlineBlocks(_ tag: String, in page: [UInt8]) -> [ArraySlice<UInt8>] {
        let open = Array("<\(tag)".utf8)
        let close = Array("</\(tag)>".utf8)
        var blocks: [ArraySlice<UInt8>] = []
        var rest = page[...]
        while let start = rest.firstRange(of: open) {
            rest = rest[start.upperBound...]
            // `<style>` or `<script type=…>`, not `<scripts`.
            guard let next = rest.first, next == UInt8(ascii: ">") || next == UInt8(ascii: " ") else { continue }
            guard let tagEnd = rest.firstIndex(of: UInt8(ascii: ">")), let end = rest.firstRange(of: close) else {
                break
            }
            let attributes = rest[..<tagEnd]
            if attributes.firstRange(of: Array(" src=".utf8)) == nil {
                blocks.append(rest[rest.index(after: tagEnd)..<end.lowerBound])
            }
            rest = rest[end.upperBound...]
        }
        return blocks
    }
}

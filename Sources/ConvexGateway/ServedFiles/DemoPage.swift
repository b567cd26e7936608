import HTTPFields

/// `GET /`: a page that uses `/client.js` same-origin on the embedded deployment's demo functions (the standings, live,
/// with a button that records a win; the paginated feed with "Load more" and a post box), so a newcomer who runs
/// `scripts/gateway` and opens the printed address sees live values change. Served only when the gateway runs on the
/// embedded deployment (``GatewayConfiguration/demoPage``): a real deployment has other functions.
enum DemoPage {
    static let file = EmbeddedFile(
        body: PackageResources.index_html, contentType: "text/html; charset=utf-8", etagPrefix: "demo",
        extraHeaders: [
            // Its own script and client.js, its inline module and styles; requests to this gateway only.
            (
                HeaderName.contentSecurityPolicy,
                "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'"
            ),
            (HeaderName.referrerPolicy, "no-referrer"),
        ])
}

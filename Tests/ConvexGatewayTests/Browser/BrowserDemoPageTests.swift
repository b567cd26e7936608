import Foundation
import Testing

/// The newcomer's first page: `convex-gateway` on the embedded deployment serves its demo page at `/`; in headless
/// Chromium the page shows the live standings, records a win when its button is clicked (the table follows), and posts
/// to the live feed, under its content policy (no `'unsafe-inline'`: its inline module and styles by their hashes)
/// with no violation reported.
@Suite("The demo page in a real browser", .browser, .serialized, .timeLimit(.minutes(5)))
struct BrowserDemoPageTests {
    struct Report: Decodable {
        var teams: Int
        var before: Int
        var after: Int
        var status: String
        var styled: Bool
        var violations: [String]
    }

    /// Installed before the page's own scripts run: every violation of its content policy the page reports (a blocked
    /// inline script or style, a style attribute, an eval) is kept in `window.violations`.
    static let violationRecorder = """
        window.violations = [];
        document.addEventListener("securitypolicyviolation", (event) => {
          window.violations.push(`${event.effectiveDirective} refused ${event.blockedURI} ${event.sample}`);
          window.changed?.();
        });
        """

    @Test("the page at / shows live standings, records a win on a click, and posts to the feed")
    func demoPage() async throws {
        try await TestGateway.run(.page) { gateway, _, page in
            try await page.send("Page.addScriptToEvaluateOnNewDocument", ["source": Self.violationRecorder])
            try await page.navigate(to: "http://127.0.0.1:\(gateway.port)/")
            let report = try await page.evaluate(
                """
                (async () => {
                  // The page has no hook for the test: the waits are re-checked every 20 ms.
                  const poll = setInterval(() => changed(), 20);
                  const row = () => document.querySelector('#standings tr[data-team="Guardians"]');
                  const wins = () => Number(row()?.cells[2].textContent);
                  await until(() => row() !== null, "the standings");
                  const connection = document.getElementById("connection");
                  await until(() => connection.textContent.startsWith("Live"), () => `live (${connection.textContent})`);
                  const before = wins();
                  row().querySelector("button").click();
                  await until(() => wins() === before + 1, () => `the win (wins ${wins()}, was ${before})`);
                  const input = document.querySelector("#post input");
                  input.value = "hello from the demo page";
                  document.querySelector("#post button").click();
                  const posts = () => [...document.querySelectorAll("#feed li")].map((item) => item.textContent);
                  await until(() => posts().includes("anonymous: hello from the demo page"),
                    () => `the post (feed ${JSON.stringify(posts())})`);
                  // Cleared when the mutation's answer comes, which may be after the live feed shows the post.
                  await until(() => input.value === "", () => `the post box cleared (it holds "${input.value}")`);
                  clearInterval(poll);
                  return { teams: document.querySelectorAll("#standings tbody tr").length, before, after: wins(),
                           status: document.getElementById("status").textContent,
                           styled: getComputedStyle(document.querySelector("table")).borderCollapse === "collapse",
                           violations };
                })()
                """, as: Report.self)
            #expect(report.teams > 1)
            #expect(report.after == report.before + 1)
            #expect(report.status.isEmpty, "no error shown: \(report.status)")
            #expect(report.styled, "the inline style sheet applies")
            #expect(report.violations.isEmpty, "content policy violations: \(report.violations)")
            // The recorder sees a violation when there is one: a style attribute, which the policy refuses.
            let control = try await page.evaluate(
                """
                (async () => {
                  document.body.insertAdjacentHTML("beforeend", '<p id="attribute" style="color: red">x</p>');
                  await until(() => violations.length > 0, "a violation for the style attribute", 5000);
                  return violations;
                })()
                """, as: [String].self)
            #expect(control.contains { $0.hasPrefix("style-src") }, "\(control)")
            #expect(gateway.log.contains("Demo page: open http://127.0.0.1:\(gateway.port)/"), "\(gateway.log)")
        }
    }
}

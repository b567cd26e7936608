import Foundation
import TestSupport
import Testing

/// A browser tab attached over the DevTools protocol, in the default browser context or a separate one (its own
/// cookies and storage, like another user's browser).
struct BrowserPage: Sendable {
    let connection: DevToolsConnection
    let targetID: String
    let sessionID: String

    /// Creates a browser context: a separate profile whose pages share no cookies with others.
    static func newContext(_ connection: DevToolsConnection) async throws -> String {
        let result = try await connection.send("Target.createBrowserContext", ["disposeOnDetach": true])
        return try field("browserContextId", of: result)
    }

    /// Opens a tab (in `context`, if given), loads `url` and installs the test helpers (``pageHelpers``).
    static func open(_ connection: DevToolsConnection, url: String, context: String? = nil) async throws -> BrowserPage
    {
        var params: [String: Any] = ["url": "about:blank"]
        if let context { params["browserContextId"] = context }
        let targetID = try field("targetId", of: try await connection.send("Target.createTarget", params))
        let attached = try await connection.send("Target.attachToTarget", ["targetId": targetID, "flatten": true])
        let page = BrowserPage(
            connection: connection, targetID: targetID, sessionID: try field("sessionId", of: attached))
        try await page.send("Page.enable")
        try await page.navigate(to: url)
        return page
    }

    @discardableResult
    func send(_ method: String, _ params: [String: Any] = [:], timeout: Duration = .seconds(30)) async throws -> Data {
        try await connection.send(method, params, session: sessionID, timeout: timeout)
    }

    /// Loads `url`, waits for its load event, and installs the test helpers.
    func navigate(to url: String) async throws {
        let loaded = connection.expectEvent("Page.loadEventFired", session: sessionID)
        let result = try await send("Page.navigate", ["url": url])
        if let error = (try? JSONSerialization.jsonObject(with: result) as? [String: Any])?["errorText"] as? String {
            throw TestFailure("navigating to \(url) failed: \(error)")
        }
        _ = try await connection.wait(for: loaded)
        _ = try await evaluate(Self.pageHelpers)
    }

    /// Runs `expression` in the page, awaiting it if it is a promise, and returns its value as JSON.
    /// - Throws: the page's exception (its message and stack), or ``TestFailure`` after `timeout`.
    func evaluate(_ expression: String, timeout: Duration = .seconds(40)) async throws -> Data {
        let result = try await send(
            "Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true],
            timeout: timeout)
        let object = try JSONSerialization.jsonObject(with: result) as? [String: Any] ?? [:]
        if let exception = object["exceptionDetails"] as? [String: Any] {
            let thrown = (exception["exception"] as? [String: Any])?["description"] as? String
            throw TestFailure("the page threw: \(thrown ?? exception["text"] as? String ?? "\(exception)")")
        }
        let value = (object["result"] as? [String: Any])?["value"] ?? NSNull()
        return try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])
    }

    /// ``evaluate(_:timeout:)``, the value decoded as `T`.
    func evaluate<T: Decodable>(_ expression: String, as type: T.Type, timeout: Duration = .seconds(40)) async throws
        -> T
    {
        let json = try await evaluate(expression, timeout: timeout)
        do {
            return try JSONDecoder().decode(T.self, from: json)
        } catch {
            throw TestFailure("the page answered \(String(decoding: json, as: UTF8.self)), not a \(T.self): \(error)")
        }
    }

    func close() async throws {
        try await connection.send("Target.closeTarget", ["targetId": targetID])
    }

    /// Installed in every page: `until(check, what, ms)` resolves once `check()` holds, re-checking whenever
    /// `changed()` is called (pages call it from their event handlers), and rejects naming `what` after `ms`.
    static let pageHelpers = """
        (() => {
          const waiting = new Set();
          window.changed = () => { for (const waiter of [...waiting]) waiter(); };
          window.until = (check, what, ms = 30000) => new Promise((resolve, reject) => {
            // `what` names the wait; as a function, it also tells the state the page was in when the time ran out.
            const timer = setTimeout(() => {
              waiting.delete(test);
              reject(new Error(`timed out: ${typeof what === "function" ? what() : what}`));
            }, ms);
            const test = () => {
              let done;
              try { done = check(); } catch (error) { waiting.delete(test); clearTimeout(timer); return reject(error); }
              if (done) { waiting.delete(test); clearTimeout(timer); resolve(); }
            };
            waiting.add(test);
            test();
          });
          // An unsigned JWT, which the embedded deployment accepts in its development mode (it checks exp).
          window.unsignedJWT = (claims) => {
            const part = (object) => btoa(JSON.stringify(object))
              .replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
            const now = Math.floor(Date.now() / 1000);
            return `${part({ alg: "none" })}.${part({ iss: "https://issuer.test", iat: now - 1, ...claims })}.sig`;
          };
          return true;
        })()
        """

    private static func field(_ name: String, of result: Data) throws -> String {
        guard let object = try JSONSerialization.jsonObject(with: result) as? [String: Any],
            let value = object[name] as? String
        else { throw TestFailure("no \(name) in \(String(decoding: result, as: UTF8.self))") }
        return value
    }
}

extension BrowserPage {
    /// Runs the real `convex-gateway` (``GatewayProcess``) and headless Chromium with one tab open on the gateway's
    /// `/healthz`, so the page is same-origin with every route.
    /// A gateway a test can stop and start again under a page: `body` gets `restart(_:)`, which runs a new
    /// `convex-gateway` process on the same port (so the page keeps its origin) for as long as its closure runs, with
    /// the deployment of another gateway process that lives for the whole test (so the data outlives each restart), the
    /// browser, and the page's URL on that port.
    static func withRestartableGateway<T: Sendable>(
        _ body: (
            _ restart: (_ run: (GatewayProcess) async throws -> Void) async throws -> Void,
            _ browser: DevToolsConnection,
            _ origin: String
        ) async throws -> T
    ) async throws -> T {
        try await TestGateway.run(.process) { deploymentHost in
            let deployment = try #require(
                BrowserCallTests.deploymentPort(inLog: deploymentHost.log), "no convex.url in the log")
            let port = try portBelowTheEphemeralRange()
            let arguments = ["--convex-url", "http://127.0.0.1:\(deployment)", "--port", "\(port)"]
            return try await HeadlessChromium.run { browser in
                try await body(
                    { run in try await TestGateway.run(.process, arguments: arguments, run) }, browser,
                    "http://127.0.0.1:\(port)")
            }
        }
    }
}

import Foundation
import Testing

/// One bad name never breaks a page: in headless Chromium, against the real `convex-gateway` binary, a page follows good
/// live queries (a plain one and a paginated feed) beside every kind of bad one. The gateway refuses the stream for a
/// bad one before it opens, naming it in the error's `sub` field; client.js drops that one, tells its `onError`, and
/// opens the stream again with the others, which get their values and their updates.
@Suite("Bad subscriptions beside good ones in a real browser", .browser, .serialized, .timeLimit(.minutes(5)))
struct BrowserBadSubscriptionTests {
    struct Report: Decodable {
        /// The error code each bad subscription heard, by its name in the page.
        var refused: [String: String]
        /// How many errors each bad subscription heard.
        var refusals: [String: Int]
        /// Errors the good subscriptions heard.
        var goodErrors: [String]
        /// The counter's values, before and after a mutation.
        var counter: [Double]
        var feedStatus: String
        var feedItems: Int
        /// Whether a bad subscription got a value.
        var badValues: Bool
    }

    /// Each bad subscription of the page: its name (a JavaScript identifier), its function, its arguments (JavaScript),
    /// and the code it must hear. In the page, 9007199254740993 is already 2^53 (JavaScript reads it as a float64),
    /// which the gateway refuses for an int64 rather than store a number the page did not mean.
    static let bad: [(name: String, function: String, args: String, code: String)] = [
        ("dotted", "messages.list", "{}", "InvalidFunctionPath"),
        ("noModule", ":x", "{}", "InvalidFunctionPath"),
        ("twoColons", "mlb::x", "{}", "InvalidFunctionPath"),
        ("defaultExport", "fn.js", "{}", "FunctionNotFound"),
        ("unknown", "nothing:here", "{}", "FunctionNotFound"),
        ("fraction", "conformance:typed", #"{ "x": 1.5 }"#, "ArgumentValidationError"),
        ("rounded", "conformance:typed", #"{ "x": 9007199254740993 }"#, "ArgumentValidationError"),
        ("wrongType", "mlb:first_place_team", #"{ "division": 12 }"#, "ArgumentValidationError"),
    ]

    @Test("a good live query and a paginated feed get values and updates beside every kind of bad subscription")
    func goodBesideBad() async throws {
        let badSubscriptions = Self.bad.map { bad in
            """
            gateway.subscribe("\(bad.function)", \(bad.args), () => { values.bad = true; },
              (error) => { refused.\(bad.name) = error.code; refusals.\(bad.name) = (refusals.\(bad.name) ?? 0) + 1;
                           changed(); });
            """
        }.joined(separator: "\n")
        try await TestGateway.run(.page) { _, _, page in
            let report = try await page.evaluate(
                """
                (async () => {
                  const { ConvexGateway } = await import(`${location.origin}/client.js`);
                  const gateway = new ConvexGateway(location.origin);
                  const values = { counter: [] }, refused = {}, refusals = {}, goodErrors = [];
                  for (let i = 0; i < 3; i++) await gateway.mutation("feed:post", { body: `post ${i}`, channel: "bad-names" });
                  gateway.subscribe("conformance:counter", { name: "beside-bad" },
                    (value) => { values.counter.push(value); changed(); },
                    (error) => { goodErrors.push(`counter: ${error.code}`); changed(); });
                  let feedStatus = "none", feedItems = 0;
                  gateway.paginatedQuery("feed:list", { channel: "bad-names" }, { initialNumItems: 2 },
                    (results, status) => { feedStatus = status; feedItems = results.length; changed(); },
                    (error) => { goodErrors.push(`feed: ${error.code}`); changed(); });
                  \(badSubscriptions)
                  const names = [\(Self.bad.map { "\"\($0.name)\"" }.joined(separator: ", "))];
                  await until(() => names.every((name) => refused[name]),
                    () => `every bad subscription's refusal (heard: ${JSON.stringify(refused)})`);
                  await until(() => values.counter.length > 0 && feedStatus === "CanLoadMore",
                    () => `the good ones' values (counter ${values.counter}, feed ${feedStatus})`);
                  await gateway.mutation("conformance:increment", { name: "beside-bad" });
                  await until(() => values.counter.at(-1) === 1, "the counter's update");
                  gateway.close();
                  return { refused, refusals, goodErrors, counter: values.counter, feedStatus, feedItems,
                           badValues: values.bad === true };
                })()
                """, as: Report.self)
            for bad in Self.bad {
                #expect(report.refused[bad.name] == bad.code, "\(bad.name): \(bad.function) \(bad.args)")
                #expect(report.refusals[bad.name] == 1, "\(bad.name) hears of its refusal once")
            }
            #expect(report.goodErrors.isEmpty, "\(report.goodErrors)")
            #expect(report.counter == [0, 1])
            #expect(report.feedStatus == "CanLoadMore")
            #expect(report.feedItems == 2)
            #expect(!report.badValues)
        }
    }
}

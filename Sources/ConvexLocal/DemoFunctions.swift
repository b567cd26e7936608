import ConvexValues
import Foundation

/// The functions a local deployment serves by default, and their seed data.
///
/// | Path | Kind | Arguments | Returns |
/// | --- | --- | --- | --- |
/// | `mlb:first_place_team` | query | `division: string` | `{name, uniformColors: [string], wins: int64, losses: int64}` or null |
/// | `mlb:teams` | query | `division?: string` | teams with `division` |
/// | `mlb:record_win` / `mlb:record_loss` | mutation | `team: string` | the team's new record |
/// | `logs:list` | query | — | `[{_id, _creationTime, name, in, out}]` |
/// | `logs:add` | mutation | `name, in, out: string` | new id |
/// | `messages:list` | query | `channel?: string` | messages, oldest first |
/// | `messages:send` | mutation | `body: string, author?: string, channel?: string` | new id |
/// | `items:list` | query | — | `[{_id, _creationTime, text}]`, newest first |
/// | `items:add` | mutation | `text: string` | new id |
/// | `items:update` | mutation | `id: Id<"items">, text: string` | null |
/// | `items:remove` | mutation | `id: Id<"items">` | null |
/// | `feed:list` | query, paginated | `paginationOpts, channel?: string` | a page of posts in the feed's order |
/// | `feed:all` | query | `channel?: string, limit?: number` | the first `limit` posts (all without) in the feed's order |
/// | `feed:post` | mutation | `body: string, author?: string, channel?: string` | new id |
/// | `feed:edit` | mutation | `id: Id<"feed">, body: string` | null |
/// | `feed:remove` | mutation | `id: Id<"feed">` | null |
/// | `feed:setOrder` | mutation | `order: "newest" \| "oldest"` | null (the feed's order; cursors of the other become invalid) |
/// | `echo:echo`, `echo:echoMutation`, `echo:echoAction` | query, mutation, action | anything | the arguments |
/// | `conformance:*` | various | see ``register(in:)`` | helpers for conformance tests |
enum DemoFunctions {
    static let teams: [(name: String, division: String, colors: [String], wins: Int64, losses: Int64)] = [
        ("Guardians", "AL Central", ["blue", "white", "red"], 80, 60),
        ("Twins", "AL Central", ["navy", "red", "white"], 75, 65),
        ("Royals", "AL Central", ["royal blue", "white", "gold"], 70, 70),
        ("Orioles", "AL East", ["orange", "black", "white"], 85, 55),
        ("Yankees", "AL East", ["navy", "white", "gray"], 84, 56),
        ("Astros", "AL West", ["navy", "orange", "white"], 78, 62),
        ("Mariners", "AL West", ["navy", "teal", "silver"], 77, 63),
        ("Phillies", "NL East", ["red", "white", "blue"], 86, 54),
        ("Braves", "NL East", ["navy", "red", "white"], 80, 60),
        ("Brewers", "NL Central", ["navy", "gold", "white"], 82, 58),
        ("Dodgers", "NL West", ["dodger blue", "white", "red"], 88, 52),
        ("Padres", "NL West", ["brown", "gold", "white"], 81, 59),
    ]

    static func seed(_ core: DeploymentCore) {
        _ = try? core.store.write { transaction in
            for team in teams {
                _ = try transaction.insert(
                    "teams",
                    [
                        "name": .string(team.name), "division": .string(team.division),
                        "uniformColors": .array(team.colors.map { .string($0) }),
                        "wins": .int64(team.wins), "losses": .int64(team.losses),
                    ])
            }
            _ = try transaction.insert(
                "logs", ["name": "Bob", "in": "2024-10-03 08:00:00", "out": "2024-10-03 11:00:00"])
        }
    }

    static func teamRecord(_ doc: Document) -> ConvexValue {
        [
            "name": doc["name"] ?? .null, "uniformColors": doc["uniformColors"] ?? .array([]),
            "wins": doc["wins"] ?? .int64(0), "losses": doc["losses"] ?? .int64(0),
        ]
    }

    static func int(_ v: ConvexValue?) -> Int64 {
        if case .int64(let i)? = v { return i }
        return 0
    }

    static func register(in functions: FunctionRegistry) {
        // MARK: mlb
        functions.query("mlb:first_place_team", args: ["division": .string]) { ctx, args in
            let teams = ctx.query("teams").filter("division", equals: args["division"] ?? .null).collect()
            let best = teams.max { a, b in
                let (wa, wb) = (int(a["wins"]), int(b["wins"]))
                return wa != wb ? wa < wb : int(a["losses"]) > int(b["losses"])
            }
            return best.map(teamRecord) ?? .null
        }
        functions.query("mlb:teams", args: ["division": .optional(.string)]) { ctx, args in
            var q = ctx.query("teams")
            if let division = args["division"] { q = q.filter("division", equals: division) }
            return .array(
                q.collect().map { doc in
                    var record = teamRecord(doc)
                    if case .object(var fields) = record {
                        fields["division"] = doc["division"]; record = .object(fields)
                    }
                    return record
                })
        }
        for (name, field) in [("mlb:record_win", "wins"), ("mlb:record_loss", "losses")] {
            functions.mutation(name, args: ["team": .string]) { ctx, args in
                guard let team = ctx.query("teams").filter("name", equals: args["team"] ?? .null).first(),
                    case .string(let id)? = team["_id"]
                else {
                    throw ConvexError(["code": "UnknownTeam", "team": args["team"] ?? .null])
                }
                try ctx.patch(id, [field: .int64(int(team[field]) + 1)])
                ctx.log("recorded \(field == "wins" ? "a win" : "a loss") for \(args["team"].map { "\($0)" } ?? "")")
                return teamRecord(ctx.get(id) ?? team)
            }
        }

        // MARK: logs
        functions.query("logs:list") { ctx, _ in
            .array(ctx.query("logs").collect().map { .object($0) })
        }
        functions.mutation("logs:add", args: ["name": .string, "in": .string, "out": .string]) { ctx, args in
            .string(try ctx.insert("logs", args))
        }

        // MARK: messages
        functions.query("messages:list", args: ["channel": .optional(.string)]) { ctx, args in
            var q = ctx.query("messages")
            if let channel = args["channel"] { q = q.filter("channel", equals: channel) }
            return .array(q.collect().map { .object($0) })
        }
        functions.mutation(
            "messages:send",
            args: ["body": .string, "author": .optional(.string), "channel": .optional(.string)]
        ) { ctx, args in
            var fields = args
            if fields["author"] == nil { fields["author"] = "anonymous" }
            return .string(try ctx.insert("messages", fields))
        }

        registerFeed(in: functions)

        // MARK: items (a list of documents that changes one document at a time)
        functions.query("items:list") { ctx, _ in
            .array(ctx.query("items").order(.descending).collect().map { .object($0) })
        }
        functions.mutation("items:add", args: ["text": .string]) { ctx, args in
            .string(try ctx.insert("items", args))
        }
        functions.mutation("items:update", args: ["id": .id("items"), "text": .string]) { ctx, args in
            guard case .string(let id)? = args["id"] else { return .null }
            try ctx.patch(id, ["text": args["text"] ?? ""])
            return .null
        }
        functions.mutation("items:remove", args: ["id": .id("items")]) { ctx, args in
            guard case .string(let id)? = args["id"] else { return .null }
            try ctx.delete(id)
            return .null
        }

        // MARK: echo
        functions.query("echo:echo") { _, args in .object(args) }
        functions.query("echo") { _, args in .object(args) }
        functions.mutation("echo:echoMutation") { _, args in .object(args) }
        functions.action("echo:echoAction") { _, args in .object(args) }

        // MARK: conformance helpers
        functions.action("conformance:add", args: ["a": .float64, "b": .float64]) { ctx, args in
            guard case .float64(let a)? = args["a"], case .float64(let b)? = args["b"] else { return .null }
            ctx.log("adding")
            return .float64(a + b)
        }
        functions.action("conformance:sendViaAction", args: ["body": .string]) { ctx, args in
            let id = try await ctx.runMutation("messages:send", ["body": args["body"] ?? "", "channel": "action"])
            let messages = try await ctx.runQuery("messages:list", ["channel": "action"])
            return ["id": id, "count": .float64(Double(messages.count))]
        }
        functions.query("conformance:convexErrorQuery") { _, _ in
            throw ConvexError(["code": "NOPE", "n": .int64(42)])
        }
        functions.mutation("conformance:convexError", args: ["data": .any]) { _, args in
            throw ConvexError(args["data"] ?? .null)
        }
        functions.action("conformance:convexErrorAction") { _, _ in
            throw ConvexError("action says no")
        }
        functions.query("conformance:plainErrorQuery") { _, _ in
            throw FunctionFailure(message: "boom")
        }
        functions.mutation("conformance:plainError") { ctx, _ in
            try ctx.insert("messages", ["body": "never committed"])
            throw FunctionFailure(message: "boom")
        }
        functions.action("conformance:plainErrorAction") { _, _ in
            throw FunctionFailure(message: "boom")
        }
        functions.query("conformance:internalQuery", visibility: .internal) { _, _ in "internal ok" }
        functions.mutation("conformance:internalMutation", visibility: .internal) { _, _ in "internal mutation ok" }
        functions.query("conformance:whoami") { ctx, _ in
            ["identity": ctx.identity?.value ?? .null, "isAdmin": .boolean(ctx.isAdmin)]
        }
        functions.query("conformance:failing") { ctx, _ in
            if let flag = ctx.query("flags").filter("name", equals: "fail").first(), flag["on"] == .boolean(true) {
                throw FunctionFailure(message: "failing on demand")
            }
            return "ok"
        }
        functions.mutation("conformance:setFailing", args: ["fail": .boolean]) { ctx, args in
            if let flag = ctx.query("flags").filter("name", equals: "fail").first(), case .string(let id)? = flag["_id"]
            {
                try ctx.patch(id, ["on": args["fail"] ?? false])
            } else {
                try ctx.insert("flags", ["name": "fail", "on": args["fail"] ?? false])
            }
            return .null
        }
        functions.query("conformance:counter", args: ["name": .string]) { ctx, args in
            ctx.query("counters").filter("name", equals: args["name"] ?? .null).first()?["value"] ?? .int64(0)
        }
        functions.mutation("conformance:increment", args: ["name": .string]) { ctx, args in
            if let doc = ctx.query("counters").filter("name", equals: args["name"] ?? .null).first(),
                case .string(let id)? = doc["_id"]
            {
                let next = int(doc["value"]) + 1
                try ctx.patch(id, ["value": .int64(next)])
                return .int64(next)
            }
            try ctx.insert("counters", ["name": args["name"] ?? .null, "value": .int64(1)])
            return .int64(1)
        }
        functions.query("conformance:typed", args: ["x": .int64, "tags": .optional(.array(.string))], returns: .int64) {
            _, args in
            args["x"] ?? .int64(0)
        }
        functions.query("conformance:log", args: ["text": .string]) { ctx, args in
            if case .string(let text)? = args["text"] { ctx.log(text) }
            return .null
        }
        functions.action("conformance:sleep", args: ["ms": .float64]) { _, args in
            if case .float64(let ms)? = args["ms"] { try await Task.sleep(for: .milliseconds(Int(ms))) }
            return .null
        }
    }
}

extension ConvexValue {
    /// Element count of an array, field count of an object, 0 otherwise.
    var count: Int {
        switch self {
        case .array(let items): items.count
        case .object(let fields): fields.count
        default: 0
        }
    }
}

extension DemoFunctions {
    /// A feed of posts to page through: `feed:list` is a paginated query over the `feed` table, newest first unless
    /// `feed:setOrder` set `"oldest"` (stored in `feedSettings`, as an app's setting would be). Changing the order
    /// changes the query, so the cursors of the other order fail with `InvalidCursor` and clients start over.
    /// The feed's posts of `channel` (all without), in the feed's order.
    private static func feed(_ ctx: QueryContext, channel: ConvexValue?) -> TableQuery {
        let order: ScanOrder = ctx.query("feedSettings").first()?["order"] == "oldest" ? .ascending : .descending
        var q = ctx.query("feed").order(order)
        if let channel { q = q.filter("channel", equals: channel) }
        return q
    }

    static func registerFeed(in functions: FunctionRegistry) {
        functions.query(
            "feed:list", args: ["paginationOpts": PaginationOptions.validator, "channel": .optional(.string)]
        ) { ctx, args in
            try feed(ctx, channel: args["channel"]).paginate(args["paginationOpts"])
        }
        functions.query("feed:all", args: ["channel": .optional(.string), "limit": .optional(.float64)]) { ctx, args in
            let posts = feed(ctx, channel: args["channel"])
            guard case .float64(let limit)? = args["limit"] else { return .array(posts.collect().map { .object($0) }) }
            return .array(posts.take(Int(max(0, min(limit, 1e6)))).map { .object($0) })
        }
        functions.mutation(
            "feed:post", args: ["body": .string, "author": .optional(.string), "channel": .optional(.string)]
        ) { ctx, args in
            var fields = args
            if fields["author"] == nil { fields["author"] = "anonymous" }
            return .string(try ctx.insert("feed", fields))
        }
        functions.mutation("feed:edit", args: ["id": .id("feed"), "body": .string]) { ctx, args in
            guard case .string(let id)? = args["id"] else { return .null }
            try ctx.patch(id, ["body": args["body"] ?? ""])
            return .null
        }
        functions.mutation("feed:remove", args: ["id": .id("feed")]) { ctx, args in
            guard case .string(let id)? = args["id"] else { return .null }
            try ctx.delete(id)
            return .null
        }
        functions.mutation(
            "feed:setOrder", args: ["order": .union([.literal("newest"), .literal("oldest")])]
        ) { ctx, args in
            if let settings = ctx.query("feedSettings").first(), case .string(let id)? = settings["_id"] {
                try ctx.patch(id, ["order": args["order"] ?? "newest"])
            } else {
                try ctx.insert("feedSettings", ["order": args["order"] ?? "newest"])
            }
            return .null
        }
    }
}

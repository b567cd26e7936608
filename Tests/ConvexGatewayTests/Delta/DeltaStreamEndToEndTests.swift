import ConvexGateway
import ConvexValues
import Foundation
import TestSupport
import Testing

/// `delta=json-patch` end to end: after the first full value, a list of documents that changes one document at a
/// time (`items:*`) is followed by one-operation patches, chained by their hashes, on single- and
/// multi-subscription streams, beside a stream of the same query that gets full values.
@Suite(.timeLimit(.minutes(5)))
struct DeltaStreamEndToEndTests {
    func json(_ event: ReceivedEvent) throws -> ConvexValue { try ConvexValue(plainJSON: Array(event.data.utf8)) }

    /// The hash at the end of a single-subscription event's id.
    func hash(ofID id: String?) throws -> String {
        let id = try #require(id)
        return String(id[id.index(after: try #require(id.lastIndex(of: "-")))...])
    }

    func addItems(_ h: GatewayHarness, _ count: Int) async throws -> [String] {
        var ids: [String] = []
        for n in 0..<count {
            let response = try await h.post("/mutation/items:add", json: #"{"text":"item \#(n)"}"#)
            guard case .string(let id) = try ConvexValue(plainJSON: response.body) else {
                throw TestFailure("items:add answered \(response.text)")
            }
            ids.append(id)
        }
        return ids
    }

    @Test func aSingleSubscriptionStreamSendsOneOperationPerChangeChainedByHashes() async throws {
        try await TestGateway.run(.inProcess) { h in
            let ids = try await addItems(h, 40)
            let patched = try await h.openStream("/subscribe/items:list?delta=json-patch")
            defer { patched.close() }
            let whole = try await h.openStream("/subscribe/items:list")
            defer { whole.close() }
            let first = try #require(try await patched.nextEventAsync())
            #expect(first.event == nil)
            var value = try json(first)
            var held = try hash(ofID: first.id)
            _ = try await whole.nextEventAsync()

            let changes = [
                ("/mutation/items:add", #"{"text":"newest"}"#, "add", "/0"),
                ("/mutation/items:update", #"{"id":"\#(ids[10])","text":"edited"}"#, "replace", "/30/text"),
                ("/mutation/items:remove", #"{"id":"\#(ids[5])"}"#, "remove", "/35"),
            ]
            for (route, body, op, path) in changes {
                _ = try await h.post(route, json: body)
                let event = try #require(try await patched.nextEventAsync())
                #expect(event.event == "patch")
                let data = try json(event)
                #expect(data["base"] == .string(held))
                guard case .array(let operations)? = data["ops"] else { throw TestFailure("no ops: \(event.data)") }
                #expect(operations.count == 1)
                #expect(operations.first?["op"] == .string(op))
                #expect(operations.first?["path"] == .string(path))
                value = try JSONPatchApplier.apply(operations, to: value)
                held = try hash(ofID: event.id)
                #expect(data["v"] == .string(held))
                // The same query without deltas: the full value, equal to the patched one.
                let full = try #require(try await whole.nextEventAsync())
                #expect(full.event == nil)
                #expect(try json(full) == value)
                #expect(full.id == event.id)
                #expect(event.data.utf8.count * 10 < full.data.utf8.count)
            }
        }
    }

    @Test func aPatchNotSmallerThanHalfTheValueIsSentAsTheFullValue() async throws {
        try await TestGateway.run(.inProcess) { h in
            let stream = try await h.openStream("/subscribe/messages:list?channel=delta-small&delta=json-patch")
            defer { stream.close() }
            #expect(try json(try #require(try await stream.nextEventAsync())) == [])
            _ = try await h.post("/mutation/messages:send", json: #"{"body":"first","channel":"delta-small"}"#)
            let next = try #require(try await stream.nextEventAsync())
            #expect(next.event == nil)
            #expect(try json(next)[0]?["body"] == "first")
        }
    }

    /// The changes of a transition event.
    func changes(_ event: ReceivedEvent) throws -> [ConvexValue] {
        guard case .array(let changes)? = try json(event)["changes"] else { throw TestFailure("no changes: \(event)") }
        return changes
    }

    @Test func aMultiSubscriptionStreamNamesItsPatchesAndCarriesValueHashes() async throws {
        try await TestGateway.run(.inProcess) { h in
            _ = try await addItems(h, 30)
            let stream = try await h.openStream(
                "/subscribe?sub.items=items:list&sub.team=mlb:first_place_team&args.team=%7B%22division%22%3A%22AL%20Central%22%7D&delta=json-patch&format=clean"
            )
            defer { stream.close() }
            var values: [String: ConvexValue] = [:]
            var held: [String: ConvexValue] = [:]
            let first = try #require(try await stream.nextEventAsync())
            #expect(first.event == "transition")
            for change in try changes(first) {
                let sub = try #require(change["sub"].flatMap { if case .string(let s) = $0 { s } else { nil } })
                values[sub] = change["value"]
                held[sub] = change["v"]
                #expect(change["v"] != nil)
            }
            #expect(values.count == 2)
            #expect(values["team"]?["wins"] == "80")  // clean: int64 as a decimal string

            _ = try await h.post("/mutation/items:add", json: #"{"text":"one more"}"#)
            let event = try #require(try await stream.nextEventAsync())
            #expect(event.event == "transition")
            let data = try #require(try changes(event).first)
            #expect(data["sub"] == "items")
            #expect(data["base"] == held["items"])
            guard case .array(let operations)? = data["ops"] else { throw TestFailure("no ops: \(event.data)") }
            let patched = try JSONPatchApplier.apply(operations, to: try #require(values["items"]))
            #expect(patched[0]?["text"] == "one more")
            let current = try ConvexValue(plainJSON: try await h.get("/query/items:list?format=clean").body)
            #expect(patched == current)

            // A change too big to patch well comes whole, with its hash.
            _ = try await h.post("/mutation/mlb:record_win", json: #"{"team":"Guardians"}"#)
            let winEvent = try #require(try await stream.nextEventAsync())
            let win = try #require(try changes(winEvent).first)
            #expect(win["sub"] == "team")
            #expect(win["v"] != nil)
            #expect(win["value"]?["wins"] == "81")
        }
    }

    @Test func deltaIsAStreamParameterAndABadOneIsRefused() async throws {
        try await TestGateway.run(.inProcess) { h in
            let bad = try await h.get("/subscribe/items:list?delta=diff", headers: ["Accept": "text/event-stream"])
            #expect(bad.status == 400)
            #expect(bad.errorCode == "InvalidDelta")
            let twice = try await h.get("/subscribe?sub.a=items:list&delta=json-patch&delta=json-patch")
            #expect(twice.status == 400)
            #expect(twice.errorCode == "InvalidDelta")
            // On /query, `delta` is an ordinary argument.
            let echoed = try await h.get("/query/echo:echo?delta=json-patch")
            #expect(try ConvexValue(plainJSON: echoed.body)["delta"] == "json-patch")
        }
    }
}

/// A small RFC 6902 applier (add, remove, replace, move) over plain-JSON values, for reading patches in tests.
enum JSONPatchApplier {
    struct Failure: Error, CustomStringConvertible { let description: String }

    static func apply(_ operations: [ConvexValue], to document: ConvexValue) throws -> ConvexValue {
        var document = document
        for operation in operations {
            guard case .string(let op)? = operation["op"], case .string(let path)? = operation["path"] else {
                throw Failure(description: "bad operation \(operation)")
            }
            switch op {
            case "add": document = try add(operation["value"] ?? .null, at: pointer(path), in: document)
            case "remove": document = try remove(at: pointer(path), in: document).document
            case "replace":
                document = try add(
                    operation["value"] ?? .null, at: pointer(path),
                    in: try remove(at: pointer(path), in: document).document)
            case "move":
                guard case .string(let from)? = operation["from"] else {
                    throw Failure(description: "move without from")
                }
                let (rest, moved) = try remove(at: pointer(from), in: document)
                document = try add(moved, at: pointer(path), in: rest)
            default: throw Failure(description: "unexpected op \(op)")
            }
        }
        return document
    }

    static func pointer(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            String($0).replacing("~1", with: "/").replacing("~0", with: "~")
        }
    }

    static func add(_ value: ConvexValue, at path: [String], in document: ConvexValue) throws -> ConvexValue {
        guard let head = path.first else { return value }
        switch document {
        case .object(var fields):
            fields[head] =
                path.count == 1 ? value : try add(value, at: Array(path.dropFirst()), in: fields[head] ?? .null)
            return .object(fields)
        case .array(var items):
            guard let index = Int(head), index <= items.count else { throw Failure(description: "bad index \(head)") }
            if path.count == 1 {
                items.insert(value, at: index)
            } else {
                items[index] = try add(value, at: Array(path.dropFirst()), in: items[index])
            }
            return .array(items)
        default: throw Failure(description: "cannot add into \(document)")
        }
    }

    static func remove(at path: [String], in document: ConvexValue) throws -> (
        document: ConvexValue, removed: ConvexValue
    ) {
        guard let head = path.first else { throw Failure(description: "cannot remove the root") }
        switch document {
        case .object(var fields):
            guard let field = fields[head] else { throw Failure(description: "no field \(head)") }
            if path.count == 1 {
                fields[head] = nil
                return (.object(fields), field)
            }
            let (inner, removed) = try remove(at: Array(path.dropFirst()), in: field)
            fields[head] = inner
            return (.object(fields), removed)
        case .array(var items):
            guard let index = Int(head), items.indices.contains(index) else {
                throw Failure(description: "bad index \(head)")
            }
            if path.count == 1 {
                let removed = items.remove(at: index)
                return (.array(items), removed)
            }
            let (inner, removed) = try remove(at: Array(path.dropFirst()), in: items[index])
            items[index] = inner
            return (.array(items), removed)
        default: throw Failure(description: "cannot remove from \(document)")
        }
    }
}

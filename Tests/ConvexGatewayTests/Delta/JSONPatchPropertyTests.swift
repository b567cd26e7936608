import ConvexValues
import Foundation
import TestSupport
import Testing

@testable import ConvexGateway

/// The patches are exact: over long random sequences of values (nested objects, arrays of documents and of plain
/// values, int64, bytes, special floats, keys that need escaping), each patch applied by an independent RFC 6902
/// implementation (Python's `jsonpatch`, from the test virtualenv) to the previous full value gives the next full
/// value, byte for byte once both are parsed, in every output mode. The sequences are also written to
/// `.build/patch-sequences/<mode>.json`, where client.js's unit tests (`node --test Tests/ClientScriptTests/`) replay
/// them through its own `applyPatch`, so server and client are checked against each other.
@Suite(.timeLimit(.minutes(5))) struct JSONPatchPropertyTests {
    static let sequences = 60
    static let steps = 40

    @Test(arguments: OutputFormat.allCases)
    func patchesAppliedByPythonsJsonpatchGiveEveryNextValue(mode: OutputFormat) async throws {
        var random = SplitMix(seed: 0xD17F_0000 + UInt64(OutputFormat.allCases.firstIndex(of: mode)!))
        var document: [UInt8] = Array("[".utf8)
        var patchCount = 0
        for sequence in 0..<Self.sequences {
            var generator = ValueGenerator(random: SplitMix(seed: random.next()))
            var value = generator.value(depth: 0)
            if sequence > 0 { document += ",".utf8 }
            document += #"{"start":"#.utf8 + value.json(mode: mode) + #","steps":["#.utf8
            for step in 0..<Self.steps {
                let next = generator.edited(value)
                let patch = JSONPatch.render(ValueDiff.operations(from: value, to: next)) { $0.json(mode: mode) }!
                if step > 0 { document += ",".utf8 }
                document += #"{"ops":"#.utf8 + patch + #","full":"#.utf8 + next.json(mode: mode) + "}".utf8
                patchCount += 1
                value = next
            }
            document += "]}".utf8
        }
        document += "]".utf8
        try Self.keepForClientTests(document, mode: mode)
        let report = try await Self.applyWithPython(document)
        #expect(report == "ok \(patchCount)", "mode \(mode)")
    }

    /// Applies every sequence's patches in order with `jsonpatch.apply_patch`; prints `ok <count>` or the first
    /// mismatch.
    static let script = """
        import json, sys, jsonpatch
        sequences = json.load(open(sys.argv[1]))
        def canonical(value):
            return json.dumps(value, sort_keys=True, ensure_ascii=False)
        count = 0
        for s, sequence in enumerate(sequences):
            doc = sequence["start"]
            for t, step in enumerate(sequence["steps"]):
                doc = jsonpatch.apply_patch(doc, step["ops"])
                if canonical(doc) != canonical(step["full"]):
                    print(f"sequence {s} step {t}: patch {json.dumps(step['ops'])[:400]} gave "
                          f"{canonical(doc)[:400]}, expected {canonical(step['full'])[:400]}")
                    sys.exit(0)
                count += 1
        print(f"ok {count}")
        """

    /// Writes the sequences where client.js's unit tests read them.
    static func keepForClientTests(_ document: [UInt8], mode: OutputFormat) throws {
        let root = GatewayProcess.packageRoot
        let directory = root.appendingPathComponent(".build/patch-sequences")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(document).write(to: directory.appendingPathComponent("\(mode).json"), options: .atomic)
    }

    static func applyWithPython(_ document: [UInt8]) async throws -> String {
        guard let python = FunctionOpenAPITests.python else {
            Issue.record(
                "Python's jsonpatch is needed: run scripts/test, which creates .venv (see scripts/requirements-test.txt)"
            )
            return "python missing"
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("patches-\(UUID().uuidString).json")
        try Data(document).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await ChildProcess.run(python, arguments: ["-c", script, file.path])
        return (run.stdout + run.stderr).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Random Convex values and random edits of them, the edits a live query's value sees: documents inserted,
/// removed, moved and changed in lists, fields added and removed, scalars and types changed.
struct ValueGenerator {
    var random: SplitMix
    private var nextID = 0

    init(random: SplitMix) { self.random = random }

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

    mutating func scalar() -> ConvexValue {
        switch Int.random(in: 0..<12, using: &random) {
        case 0: return .null
        case 1: return .boolean(chance(50))
        case 2: return .int64([0, 1, -1, .max, .min, 1 << 53 + 1].randomElement(using: &random)!)
        case 3: return .int64(Int64.random(in: -1000...1000, using: &random))
        case 4:
            return .float64([0.0, -0.0, .nan, .infinity, -.infinity, 1.5, 1e-5, 1e300].randomElement(using: &random)!)
        case 5: return .float64(Double.random(in: -1e6...1e6, using: &random))
        case 6:
            return .bytes(
                Data(
                    (0..<Int.random(in: 0..<12, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            )
        default: return .string(text())
        }
    }

    mutating func text() -> String {
        let pieces = ["a", "b", "/", "~", "~1", "é", "😀", " ", "\"", "\\", "\n", "_id", "0"]
        return (0..<Int.random(in: 0..<5, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    mutating func key() -> String {
        chance(70)
            ? ["a", "b", "c", "text", "n", "list", "x/y", "m~n", "~1", "é"].randomElement(using: &random)! : text()
    }

    mutating func document() -> ConvexValue {
        nextID += 1
        var fields: [String: ConvexValue] = ["_id": .string("doc\(nextID)"), "text": .string(text())]
        if chance(50) { fields["n"] = scalar() }
        if chance(30) { fields["tags"] = .array((0..<Int.random(in: 0..<4, using: &random)).map { _ in scalar() }) }
        return .object(fields)
    }

    mutating func value(depth: Int) -> ConvexValue {
        if depth >= 3 { return scalar() }
        switch Int.random(in: 0..<10, using: &random) {
        case 0...2:
            return .array((0..<Int.random(in: 0..<12, using: &random)).map { _ in document() })
        case 3...4:
            return .array((0..<Int.random(in: 0..<6, using: &random)).map { _ in value(depth: depth + 1) })
        case 5...7:
            var fields: [String: ConvexValue] = [:]
            for _ in 0..<Int.random(in: 0..<5, using: &random) { fields[key()] = value(depth: depth + 1) }
            return .object(fields)
        default:
            return scalar()
        }
    }

    /// One to three random edits, at random depths.
    mutating func edited(_ value: ConvexValue) -> ConvexValue {
        if chance(3) { return self.value(depth: 0) }
        var result = value
        for _ in 0..<Int.random(in: 1...3, using: &random) { result = edit(result, depth: 0) }
        return result
    }

    private mutating func edit(_ value: ConvexValue, depth: Int) -> ConvexValue {
        switch value {
        case .array(var items):
            let isDocuments =
                !items.isEmpty && items.allSatisfy { if case .object(let f) = $0 { f["_id"] != nil } else { false } }
            switch Int.random(in: 0..<6, using: &random) {
            case 0:
                items.insert(
                    isDocuments || chance(30) ? document() : self.value(depth: depth + 1),
                    at: Int.random(in: 0...items.count, using: &random))
            case 1 where !items.isEmpty:
                items.remove(at: Int.random(in: 0..<items.count, using: &random))
            case 2 where items.count > 1:
                let moved = items.remove(at: Int.random(in: 0..<items.count, using: &random))
                items.insert(moved, at: Int.random(in: 0...items.count, using: &random))
            case 3 where isDocuments && chance(20):
                // A repeated `_id`: no longer matched by id.
                items.append(items[0])
            default:
                guard !items.isEmpty else { return self.value(depth: depth) }
                let index = Int.random(in: 0..<items.count, using: &random)
                items[index] = edit(items[index], depth: depth + 1)
            }
            return .array(items)
        case .object(var fields):
            switch Int.random(in: 0..<5, using: &random) {
            case 0:
                fields[key()] = self.value(depth: depth + 1)
            case 1 where !fields.isEmpty:
                let name = fields.keys.sorted().randomElement(using: &random)!
                if name != "_id" || chance(20) { fields[name] = nil }
            default:
                guard let name = fields.keys.sorted().randomElement(using: &random) else {
                    return self.value(depth: depth)
                }
                fields[name] = edit(fields[name]!, depth: depth + 1)
            }
            return .object(fields)
        default:
            return chance(80) ? scalar() : self.value(depth: depth)
        }
    }
}

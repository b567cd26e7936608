import Foundation
import TestSupport
import Testing

@testable import ConvexValues

/// Encodes a shared corpus with ours and with the official Python client's `convex.values`, and compares both
/// directions: Python's Convex JSON read by our parser, and ours read by Python's `json_to_convex`.
@Suite struct PythonCrossCheckTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Python")

    struct PythonMissing: Error, CustomStringConvertible {
        let description: String
    }

    /// `$CONVEX_TEST_PYTHON`, else `.venv/bin/python` in the package root.
    static func python() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["CONVEX_TEST_PYTHON"], !path.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw PythonMissing(
                    description: "CONVEX_TEST_PYTHON=\(path) is not an executable; run scripts/test, "
                        + "which creates .venv with the official client (convex==0.8.1)")
            }
            return URL(fileURLWithPath: path)
        }
        let venv = packageRoot.appendingPathComponent(".venv/bin/python")
        guard FileManager.default.isExecutableFile(atPath: venv.path) else {
            throw PythonMissing(
                description: "No Python with the official Convex client: run scripts/test (it creates "
                    + ".venv with convex==0.8.1), or `python3 -m venv .venv && .venv/bin/pip install -r "
                    + "scripts/requirements-test.txt`, or set CONVEX_TEST_PYTHON to such an interpreter")
        }
        return venv
    }

    /// Builds a value from the corpus's neutral description.
    static func build(_ desc: ConvexValue) throws -> ConvexValue {
        guard case .array(let parts) = desc, case .string(let kind)? = parts.first else {
            throw PythonMissing(description: "bad corpus entry \(desc)")
        }
        let payload = parts.count > 1 ? parts[1] : .null
        switch (kind, payload) {
        case ("null", _): return .null
        case ("bool", .boolean(let b)): return .boolean(b)
        case ("int64", .string(let s)): return .int64(try #require(Int64(s)))
        case ("float64", .string(let hex)): return .float64(Double(bitPattern: try #require(UInt64(hex, radix: 16))))
        case ("string", .string(let s)): return .string(s)
        case ("bytes", .string(let hex)):
            let chars = Array(hex.utf8)
            return .bytes(
                Data(
                    try stride(from: 0, to: chars.count, by: 2).map {
                        try #require(UInt8(String(decoding: chars[$0..<$0 + 2], as: UTF8.self), radix: 16))
                    }))
        case ("array", .array(let items)): return .array(try items.map(build))
        case ("object", .object(let fields)): return .object(try fields.mapValues(build))
        case ("pairs", .array(let pairs)):
            var fields: [String: ConvexValue] = [:]
            for pair in pairs {
                guard case .array(let kv) = pair, kv.count == 2, case .string(let key) = kv[0] else {
                    throw PythonMissing(description: "bad corpus pair \(pair)")
                }
                fields[key == "LONGKEY" ? String(repeating: "k", count: 1025) : key] = try build(kv[1])
            }
            return .object(fields)
        case ("nest", .float64(let n)):
            var v = try build(parts[2])
            for _ in 0..<Int(n) { v = [v] }
            return v
        case ("nestobj", .float64(let n)):
            var v = try build(parts[2])
            for _ in 0..<Int(n) { v = ["a": v] }
            return v
        default:
            throw PythonMissing(description: "bad corpus entry \(desc)")
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func officialClientAgreesBothWays() async throws {
        let python = try Self.python()
        let corpusBytes = try Data(contentsOf: Self.directory.appendingPathComponent("corpus.json"))
        let corpus = try ConvexValue(plainJSON: corpusBytes)
        guard case .object(let described)? = corpus["values"], case .object(let rejected)? = corpus["rejected"] else {
            Issue.record("corpus.json has no values")
            return
        }
        var values: [String: ConvexValue] = [:]
        var ours: [String: ConvexValue] = [:]
        for (name, desc) in described {
            let value = try Self.build(desc)
            try value.checkLimits()
            values[name] = value
            ours[name] = .string(value.convexJSONString)
        }
        let request = ConvexValue.object(["corpus": corpus, "ours": .object(ours)]).json(mode: .plain)

        let run = try await ChildProcess.run(
            python.path, arguments: [Self.directory.appendingPathComponent("crosscheck.py").path], input: request)
        guard run.status == 0 else {
            Issue.record("\(python.path) crosscheck.py failed (status \(run.status)): \(run.stderr)")
            return
        }
        let stdout = Array(run.stdout.utf8)
        let reply = try ConvexValue(plainJSON: stdout)
        guard case .object(let pythonJSON)? = reply["python"], case .object(let decoded)? = reply["decoded"],
            case .object(let pythonRejected)? = reply["rejected"]
        else {
            Issue.record("unexpected reply \(String(decoding: stdout, as: UTF8.self))")
            return
        }
        #expect(pythonJSON.count == values.count)
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            // Python's encoding, read by our parser, is the same value.
            guard case .string(let text)? = pythonJSON[name] else {
                Issue.record("no Python encoding for \(name)")
                continue
            }
            let theirs = Result { () throws(ConvexValueError) in try ConvexValue(convexJSON: text) }
            #expect(theirs == .success(value), "\(name): Python wrote \(text), we wrote \(value.convexJSONString)")
            // Same text except where float formatting differs (Python prints 1e15 as 1000000000000000.0).
            if !text.contains("e+15") && !value.convexJSONString.contains("e+15") {
                #expect(text == value.convexJSONString, "\(name)")
            }
            // Our encoding, read by Python's json_to_convex, is the same value.
            #expect(decoded[name] == "ok", "\(name): \(decoded[name].map { "\($0)" } ?? "missing")")
        }
        for (name, desc) in rejected.sorted(by: { $0.key < $1.key }) {
            let value = try Self.build(desc)
            #expect(throws: EncodingError.self, "\(name)") { try ConvexValue(encoding: value) }
            #expect(pythonRejected[name] != nil && pythonRejected[name] != .null, "Python accepted \(name)")
            #expect(throws: ConvexValueError.self, "\(name)") { try ConvexValue(convexJSON: value.convexJSON()) }
        }
    }
}

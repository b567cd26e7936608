// The properties read the package's internal types through `@testable import`, which a release build (no testing
// enabled) cannot compile; there the target only says so (`swift build -c release` builds every target).
#if DEBUG
    import ConvexValues
    import Foundation
    import FuzzSupport

    @testable import ConvexGateway

    /// What must hold for the JSON Patches of `delta=json-patch` streams: for any two Convex values `a` and `b`,
    /// `ValueDiff.operations(from: a, to: b)` applied to `a` (by the independent RFC 6902 applier below) gives `b`
    /// exactly, and the rendered patch is a JSON array of as many operations, in every output mode.
    ///
    /// Input layout: the Convex JSON of `a`, a 0xFF byte (never part of UTF-8 text), the Convex JSON of `b`.
    enum JSONPatchProperties {
        static func check(_ bytes: [UInt8]) {
            guard let split = bytes.firstIndex(of: 0xFF),
                let old = try? ConvexValue(convexJSON: bytes[..<split]),
                let new = try? ConvexValue(convexJSON: bytes[(split + 1)...])
            else { return }
            let operations = ValueDiff.operations(from: old, to: new)
            if old == new { require(operations.isEmpty, "equal values gave \(operations.count) operations") }
            var patched = old
            for operation in operations {
                guard let next = PatchApplier.apply(operation, to: patched) else {
                    fail("operation \(operation) does not apply, from \(old) to \(new)")
                }
                patched = next
            }
            require(patched == new, "the patch from \(old) to \(new) gives \(patched): \(operations)")
            for mode in OutputFormat.allCases {
                guard let rendered = JSONPatch.render(operations, value: { $0.json(mode: mode) }) else {
                    fail("no patch rendered without a budget")
                }
                let parsed = try? JSONSerialization.jsonObject(with: Data(rendered), options: [.fragmentsAllowed])
                guard let array = parsed as? [Any] else {
                    fail("the \(mode) patch is not a JSON array: \(excerpt(rendered))")
                }
                require(array.count == operations.count, "the \(mode) patch has \(array.count) of \(operations.count)")
            }
        }
    }

    /// RFC 6902 on Convex values, written from the RFC for this check alone: `nil` when an operation's path does not
    /// exist as the RFC requires.
    enum PatchApplier {
        static func apply(_ operation: PatchOperation, to document: ConvexValue) -> ConvexValue? {
            switch operation {
            case .add(let path, let value): return add(value, at: path[...], in: document)
            case .remove(let path): return remove(at: path[...], in: document)?.document
            case .replace(let path, let value):
                if path.isEmpty { return value }
                guard let removed = remove(at: path[...], in: document) else { return nil }
                return add(value, at: path[...], in: removed.document)
            case .move(let from, let path):
                guard let removed = remove(at: from[...], in: document) else { return nil }
                return add(removed.value, at: path[...], in: removed.document)
            }
        }

        static func add(_ value: ConvexValue, at path: ArraySlice<PatchPathComponent>, in document: ConvexValue)
            -> ConvexValue?
        {
            guard let first = path.first else { return value }
            let rest = path.dropFirst()
            switch (first, document) {
            case (.key(let key), .object(var fields)):
                if rest.isEmpty {
                    fields[key] = value
                } else {
                    guard let child = fields[key], let changed = add(value, at: rest, in: child) else { return nil }
                    fields[key] = changed
                }
                return .object(fields)
            case (.index(let index), .array(var items)):
                if rest.isEmpty {
                    guard index >= 0, index <= items.count else { return nil }
                    items.insert(value, at: index)
                } else {
                    guard index >= 0, index < items.count, let changed = add(value, at: rest, in: items[index]) else {
                        return nil
                    }
                    items[index] = changed
                }
                return .array(items)
            default:
                return nil
            }
        }

        static func remove(at path: ArraySlice<PatchPathComponent>, in document: ConvexValue)
            -> (document: ConvexValue, value: ConvexValue)?
        {
            guard let first = path.first else { return nil }
            let rest = path.dropFirst()
            switch (first, document) {
            case (.key(let key), .object(var fields)):
                guard let child = fields[key] else { return nil }
                if rest.isEmpty {
                    fields[key] = nil
                    return (.object(fields), child)
                }
                guard let removed = remove(at: rest, in: child) else { return nil }
                fields[key] = removed.document
                return (.object(fields), removed.value)
            case (.index(let index), .array(var items)):
                guard index >= 0, index < items.count else { return nil }
                if rest.isEmpty {
                    let value = items.remove(at: index)
                    return (.array(items), value)
                }
                guard let removed = remove(at: rest, in: items[index]) else { return nil }
                items[index] = removed.document
                return (.array(items), removed.value)
            default:
                return nil
            }
        }
    }
#else
    import FuzzSupport

    enum JSONPatchProperties {
        static func check(_ bytes: [UInt8]) { internalTypesNeedADebugBuild("fuzz-json-patch") }
    }
#endif

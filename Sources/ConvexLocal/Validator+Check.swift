import ConvexValues

// How the local deployment checks arguments and return values against their validators (``Validator`` is the
// shared model, in ConvexValues), with Convex's messages and the table of document ids.

/// A failed validation, phrased as Convex phrases it.
struct ValidationFailure: Error, Equatable {
    let message: String
}

extension Validator {
    /// Checks named arguments against an args validator (the fields of `v.object`).
    static func validateArgs(
        _ args: [String: ConvexValue], against fields: [String: Validator],
        store: StoreSnapshot?
    ) -> ValidationFailure? {
        Validator.object(fields).check(.object(args), path: "", store: store)
    }

    /// `nil` when `value` matches; otherwise the first mismatch.
    func check(_ value: ConvexValue, path: String, store: StoreSnapshot?) -> ValidationFailure? {
        // Made only for a value that does not match: a check runs for every argument of every call.
        func noMatch() -> ValidationFailure {
            ValidationFailure(
                message: "Value does not match validator.\n"
                    + (path.isEmpty ? "" : "Path: \(path)\n") + "Value: \(value.displayText)\nValidator: \(self)")
        }
        switch (self, value) {
        case (.any, _): return nil
        case (.string, .string), (.float64, .float64), (.int64, .int64), (.boolean, .boolean), (.bytes, .bytes),
            (.null, .null):
            return nil
        case (.id(let table), .string(let id)):
            if let store, let actual = store.table(ofId: id), actual != table {
                return ValidationFailure(
                    message:
                        "Found ID \"\(id)\" from table `\(actual)`, which does not match the table name in validator `\(self)`."
                        + (path.isEmpty ? "" : "\nPath: \(path)"))
            }
            if id.isEmpty { return noMatch() }
            return nil
        case (.array(let element), .array(let items)):
            for (i, item) in items.enumerated() {
                if let failure = element.check(item, path: "\(path)[\(i)]", store: store) { return failure }
            }
            return nil
        case (.object(let fields), .object(let object)):
            for key in fields.keys.sorted() {
                let fieldValidator = fields[key]!
                if let v = object[key] {
                    let inner: Validator =
                        if case .optional(let wrapped) = fieldValidator { wrapped } else { fieldValidator }
                    if let failure = inner.check(v, path: "\(path).\(key)", store: store) { return failure }
                } else if case .optional = fieldValidator {
                    continue
                } else {
                    return ValidationFailure(
                        message:
                            "Object is missing the required field `\(key)`. Consider wrapping the field validator in `v.optional(...)` if this is expected.\n\n"
                            + (path.isEmpty ? "" : "Path: \(path)\n")
                            + "Object: \(value.displayText)\nValidator: \(self)")
                }
            }
            for key in object.keys.sorted() where fields[key] == nil {
                return ValidationFailure(
                    message: "Object contains extra field `\(key)` that is not in the validator.\n\n"
                        + (path.isEmpty ? "" : "Path: \(path)\n") + "Object: \(value.displayText)\nValidator: \(self)"
                )
            }
            return nil
        case (.optional(let inner), _):
            return inner.check(value, path: path, store: store)
        case (.union(let members), _):
            for member in members where member.check(value, path: path, store: store) == nil { return nil }
            return noMatch()
        case (.literal(let expected), _):
            return value == expected ? nil : noMatch()
        case (.record(let keys, let values), .object(let object)):
            for key in object.keys.sorted() {
                if keys.check(.string(key), path: path, store: store) != nil { return noMatch() }
                if let failure = values.check(object[key]!, path: "\(path).\(key)", store: store) { return failure }
            }
            return nil
        default:
            return noMatch()
        }
    }
}

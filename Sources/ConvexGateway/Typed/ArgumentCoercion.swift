import ConvexValues
import Foundation

/// Turns plain-JSON arguments into the Convex types their validators ask for, so that a client which cannot say
/// "int64" or "bytes" in JSON can still call such a function:
///
/// - where the validator is int64: a JSON number that is a whole number within ±(2^53 − 1), JavaScript's safe integers,
///   or a string of decimal digits within the int64 range, becomes an int64. Beyond the safe integers a JSON number may
///   have lost digits when it was read as a float64 (9007199254740993 reads as 9007199254740992), so it is refused
///   rather than silently rounded: such a number must be sent as a decimal string;
/// - where the validator is bytes: a standard base64 string becomes bytes;
/// - recursively through objects, arrays, optional fields, records and unions. A union is coerced only when the value
///   matches no member as it is and exactly one member accepts the coerced value; otherwise the value is left alone.
///
/// Anything else is left as it is, for the deployment to validate. A value that is meant for an int64 or bytes
/// validator but cannot become one (1.5, 2^63, "12abc", bad base64) is an ``ArgumentCoercionError`` naming its path.
package enum ArgumentCoercion {
    /// The largest safe integer, 2^53 − 1 (JavaScript's `Number.MAX_SAFE_INTEGER`): up to it, a whole float64 is the
    /// integer the JSON text said; from 2^53 on, two integers read as one float64 (2^53 + 1 reads as 2^53).
    static let largestSafeInteger = 9_007_199_254_740_991.0

    /// Coerces a function's arguments object.
    package static func coerce(arguments: ConvexValue, validator: Validator) throws(ArgumentCoercionError)
        -> ConvexValue
    {
        try coerce(arguments, validator, path: "")
    }

    static func coerce(_ value: ConvexValue, _ validator: Validator, path: String) throws(ArgumentCoercionError)
        -> ConvexValue
    {
        switch (validator, value) {
        case (.int64, .int64), (.bytes, .bytes):
            return value
        case (.int64, .float64(let d)):
            return .int64(try int64(d, path: path))
        case (.int64, .string(let text)):
            return .int64(try int64(text, path: path))
        case (.bytes, .string(let text)):
            guard let decoded = Base64.decode(text) else {
                throw ArgumentCoercionError(
                    path: path, message: "expected bytes as a base64 string, got invalid base64")
            }
            return .bytes(Data(decoded))
        case (.array(let element), .array(let items)):
            var out: [ConvexValue] = []
            out.reserveCapacity(items.count)
            for (index, item) in items.enumerated() {
                out.append(try coerce(item, element, path: "\(path)[\(index)]"))
            }
            return .array(out)
        case (.object(let fields), .object(let object)):
            return .object(try coerceFields(object, path: path) { fields[$0]?.unwrappingOptional })
        case (.record(_, let values), .object(let object)):
            return .object(try coerceFields(object, path: path) { _ in values })
        case (.literal(.int64(let expected)), .float64(let d)):
            // v.literal(5n) given as 5.
            return d.isFinite && abs(d) <= largestSafeInteger && d.rounded(.towardZero) == d && Int64(d) == expected
                ? .int64(expected) : value
        case (.literal(.int64(let expected)), .string(let text)):
            return parseDecimal(text) == expected ? .int64(expected) : value
        case (.optional(let inner), _):
            return try coerce(value, inner, path: path)
        case (.union(let members), _):
            return coerce(value, toOneOf: members, path: path)
        default:
            return value
        }
    }

    /// A JSON number meant for an int64: a whole number within the safe integers.
    private static func int64(_ d: Double, path: String) throws(ArgumentCoercionError) -> Int64 {
        guard d.isFinite, d.rounded(.towardZero) == d else {
            throw ArgumentCoercionError(path: path, message: "expected an int64, got the non-integral number \(d)")
        }
        guard abs(d) <= largestSafeInteger else {
            throw ArgumentCoercionError(path: path, message: beyondSafeIntegers(wholeNumberText(d)), number: d)
        }
        return Int64(d)
    }

    /// A string meant for an int64: a decimal integer within int64's range.
    private static func int64(_ text: String, path: String) throws(ArgumentCoercionError) -> Int64 {
        guard let parsed = parseDecimal(text) else {
            throw ArgumentCoercionError(
                path: path,
                message: isDecimalInteger(text)
                    ? "the integer \(printable(text, limit: 40)) is out of int64's range "
                        + "(-9223372036854775808 to 9223372036854775807)"
                    : "expected an int64, got a string that is not a decimal integer")
        }
        return parsed
    }

    /// An object's fields, each coerced by the validator `validator(name)` gives it (none: left as it is).
    private static func coerceFields(
        _ object: [String: ConvexValue], path: String, _ validator: (String) -> Validator?
    ) throws(ArgumentCoercionError) -> [String: ConvexValue] {
        var out = object
        for (name, item) in object {
            guard let field = validator(name) else { continue }
            out[name] = try coerce(item, field, path: path + "." + name)
        }
        return out
    }

    /// A value for a union: as it is when a member accepts it, else coerced when exactly one member accepts the
    /// coerced value, else left alone for the deployment to refuse.
    private static func coerce(_ value: ConvexValue, toOneOf members: [Validator], path: String) -> ConvexValue {
        if members.contains(where: { $0.accepts(value) }) { return value }
        var candidates: [ConvexValue] = []
        for member in members {
            guard let coerced = try? coerce(value, member, path: path), coerced != value, member.accepts(coerced)
            else { continue }
            if !candidates.contains(coerced) { candidates.append(coerced) }
        }
        return candidates.count == 1 ? candidates[0] : value
    }

    /// An optional sign followed by ASCII digits, within the int64 range.
    static func parseDecimal(_ text: String) -> Int64? {
        guard isDecimalInteger(text), text.utf8.count <= 21 else { return nil }
        return Int64(text)
    }

    /// Whether `text` is an optional sign followed by ASCII digits, whatever their number.
    static func isDecimalInteger(_ text: String) -> Bool {
        let bytes = text.utf8
        let digits =
            bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") ? bytes.dropFirst() : bytes[...]
        return !digits.isEmpty && digits.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// The refusal of a JSON number beyond the safe integers, quoting `sent`.
    static func beyondSafeIntegers(_ sent: String) -> String {
        "the JSON number \(sent) is beyond ±9007199254740991 (2^53 − 1), where a JSON number loses digits "
            + "(9007199254740993 reads as 9007199254740992); send it as a decimal string"
    }

    /// A whole float64 as the integer it is (`9007199254740992`, not `9.007199254740992e+15`).
    private static func wholeNumberText(_ d: Double) -> String {
        abs(d) < 9.2e18 ? String(Int64(d)) : String(format: "%.0f", d)
    }
}

/// An argument meant for an int64 or bytes validator that cannot become one. Answered as 400
/// `ArgumentValidationError`.
package struct ArgumentCoercionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where in the arguments, e.g. `.team.wins` or `.tags[2]`.
    package let path: String
    package let message: String
    /// The JSON number refused for being beyond the safe integers, as read (its text is found in the body again).
    package var number: Double? = nil

    package var description: String { "Argument \(path.isEmpty ? "object" : "'\(path.dropFirst())'"): \(message)" }

    var gatewayError: GatewayError {
        GatewayError(code: .argumentValidation, message: description)
    }
}

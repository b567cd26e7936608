import ConvexSyncProtocol
import ConvexValues
import Testing

/// One model of validators and of the function spec: what the local deployment writes, the gateway reads back
/// unchanged.
@Suite struct FunctionSpecTests {
    static let validators: [Validator] = [
        .string, .float64, .int64, .boolean, .bytes, .null, .any, .id("teams"), .array(.int64),
        .object(["a": .int64, "b": .optional(.array(.string)), "c": .object([:])]),
        .union([.null, .id("teams"), .literal("x"), .literal(.int64(5))]),
        .record(keys: .string, values: .array(.bytes)),
    ]

    @Test(arguments: validators)
    func validatorSpecJSONReadsBack(validator: Validator) {
        #expect(Validator(specJSON: validator.specJSON) == validator)
    }

    @Test func unknownValidatorShapesReadAsAny() {
        #expect(Validator(specJSON: ["type": "somethingNew"]) == .any)
        #expect(Validator(specJSON: ["type": "object"]) == .any)
        #expect(Validator(specJSON: ["no": "type"]) == .any)
    }

    @Test func specJSONReadsBack() throws {
        let spec = FunctionSpec(functions: [
            .init(
                path: "teams:update", kind: .mutation, isPublic: true, args: .object(["wins": .int64]),
                returns: .union([.null, .id("teams")])),
            .init(path: "dir/file:secret", kind: .query, isPublic: false, args: .any, returns: .any),
            .init(path: "jobs:default", kind: .action, isPublic: true, args: .object([:]), returns: .string),
        ])
        let json = spec.specJSON(url: "http://127.0.0.1:3210")
        #expect(json["url"] == "http://127.0.0.1:3210")
        #expect(json["functions"]?[0]?["identifier"] == "dir/file.js:secret")
        #expect(try FunctionSpec(specJSON: json) == spec)
        #expect(spec.publicFunction(try UdfPath(parsing: "dir/file:secret")) == nil)
        #expect(spec.publicFunction(try UdfPath(parsing: "teams.js:update"))?.kind == .mutation)
    }

    @Test func acceptsChecksShapeAndOptionalFields() {
        let validator = Validator.object(["a": .int64, "b": .optional(.string)])
        #expect(validator.accepts(["a": .int64(1)]))
        #expect(validator.accepts(["a": .int64(1), "b": "x"]))
        #expect(!validator.accepts(["b": "x"]))
        #expect(!validator.accepts(["a": .int64(1), "c": "x"]))
        #expect(!validator.accepts(["a": .float64(1)]))
    }
}

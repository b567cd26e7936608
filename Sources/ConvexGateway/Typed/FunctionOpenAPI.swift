import ConvexSyncProtocol
import ConvexValues

/// The per-deployment OpenAPI 3.1 document served at `GET /openapi.yaml?functions=1`: one operation per public
/// function of the function spec (query → `GET` and `POST /query/…`, mutation → `POST /mutation/…`, action →
/// `POST /action/…`), with argument and result schemas derived from the validators.
///
/// Results are described for the output mode the document was asked for (`?format=`): int64 is an integer with
/// `format: int64` in `plain`, a string of decimal digits in `clean` and a `{"$integer": base64}` object in `encoded`;
/// bytes are a base64 string in `plain`/`clean` and a `{"$bytes": base64}` object in `encoded`. Arguments are
/// described as the gateway accepts them (an int64 as a whole JSON number, a decimal string or `$integer`; bytes as
/// base64 or `$bytes`).
///
/// The document is JSON text, which is valid YAML 1.2, served as `application/yaml`.
package enum FunctionOpenAPI {
    /// - Parameter include: which functions to list (the gateway passes its allow/deny lists, so a refused function
    ///   is as absent here as an unknown one).
    package static func document(
        _ spec: FunctionSpec, format: OutputFormat, title: String = "ConvexGateway functions",
        include: (String) -> Bool = { _ in true }
    ) -> ConvexValue {
        var paths: [String: ConvexValue] = [:]
        for function in spec.functions.values.sorted(by: { $0.path < $1.path })
        where function.isPublic && include(function.path) {
            let argsInput = schema(function.args, mode: .input)
            let result = schema(function.returns, mode: .output(format))
            let responses: ConvexValue = [
                "200": [
                    "description": .string("The function's result (\(format.rawValue) output mode)"),
                    "content": ["application/json": ["schema": result]],
                ],
                "default": ["$ref": "#/components/responses/Error"],
            ]
            let body: ConvexValue = [
                "required": false,
                "description": "The named arguments as a JSON object (an empty body means {})",
                "content": ["application/json": ["schema": argsInput]],
            ]
            let formatParameter: ConvexValue = ["$ref": "#/components/parameters/format"]
            let id = operationName(function.path)
            switch function.kind {
            case .query:
                paths["/query/\(function.path)"] = [
                    "get": [
                        "operationId": .string("query_\(id)_get"), "summary": .string("Query \(function.path)"),
                        "parameters": [
                            formatParameter,
                            [
                                "name": "args", "in": "query", "required": false,
                                "description": "The arguments as a JSON object",
                                "content": ["application/json": ["schema": argsInput]],
                            ],
                        ],
                        "responses": responses,
                    ],
                    "post": [
                        "operationId": .string("query_\(id)"), "summary": .string("Query \(function.path)"),
                        "parameters": [formatParameter], "requestBody": body, "responses": responses,
                    ],
                ]
            case .mutation, .action:
                let kind = function.kind == .mutation ? "mutation" : "action"
                paths["/\(kind)/\(function.path)"] = [
                    "post": [
                        "operationId": .string("\(kind)_\(id)"),
                        "summary": .string("\(kind == "mutation" ? "Mutation" : "Action") \(function.path)"),
                        "parameters": [formatParameter], "requestBody": body, "responses": responses,
                    ]
                ]
            case .httpAction:
                continue
            }
        }
        return [
            "openapi": "3.1.0",
            "info": [
                "title": .string(title), "version": "1",
                "description": .string(
                    "Public functions of the deployment behind this gateway, from its function spec. Results are "
                        + "described for the '\(format.rawValue)' output mode; request ?format= on this document for another."
                ),
            ],
            "paths": .object(paths),
            "components": [
                "parameters": [
                    "format": [
                        "name": "format", "in": "query", "required": false,
                        "description": .string(
                            "Output mode of the result; this document describes results in the '\(format.rawValue)' mode"
                        ),
                        "schema": ["type": "string", "enum": ["plain", "clean", "encoded"]],
                    ]
                ],
                "responses": [
                    "Error": [
                        "description": "The gateway's error body",
                        "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
                    ]
                ],
                "schemas": [
                    "Error": [
                        "type": "object", "required": ["error"],
                        "properties": [
                            "error": [
                                "type": "object", "required": ["code", "message"],
                                "properties": [
                                    "code": ["type": "string"], "message": ["type": "string"],
                                    "data": ["description": "The data of a function's ConvexError"],
                                ],
                            ]
                        ],
                    ]
                ],
            ],
        ]
    }

    enum Mode: Equatable {
        case input
        case output(OutputFormat)
    }

    static func operationName(_ path: String) -> String {
        String(path.map { $0.isLetter || $0.isNumber ? $0 : "_" })
    }

    static let base64String: ConvexValue = ["type": "string", "contentEncoding": "base64"]

    static func wrapper(_ key: String) -> ConvexValue {
        [
            "type": "object", "required": [.string(key)], "additionalProperties": false,
            "properties": [key: base64String],
        ]
    }

    /// The JSON Schema (2020-12, as OpenAPI 3.1 uses it) of values matching `validator`.
    static func schema(_ validator: Validator, mode: Mode) -> ConvexValue {
        switch validator {
        case .any: return [:]
        case .string: return ["type": "string"]
        case .id(let table):
            return ["type": "string", "description": .string("An id of a document in the '\(table)' table")]
        case .boolean: return ["type": "boolean"]
        case .null: return ["type": "null"]
        case .float64, .int64, .bytes: return numberOrBytesSchema(validator, mode: mode)
        case .array(let element): return ["type": "array", "items": schema(element, mode: mode)]
        case .object(let fields): return objectSchema(fields, mode: mode)
        case .optional(let inner): return schema(inner, mode: mode)
        case .union(let members): return ["anyOf": .array(members.map { schema($0, mode: mode) })]
        case .literal(let value):
            switch (value, mode) {
            case (.int64(let i), .input): return ["oneOf": [["const": .int64(i)], ["const": .string(String(i))]]]
            case (.int64(let i), .output(.clean)): return ["const": .string(String(i))]
            case (.int64, .output(.encoded)), (.bytes, .output(.encoded)):
                return ["const": literalInEncodedMode(value)]
            default: return ["const": value]
            }
        case .record(_, let values):
            return ["type": "object", "additionalProperties": schema(values, mode: mode)]
        }
    }

    /// The schema of the types that JSON cannot write as they are (float64's specials, int64, bytes): each as the
    /// mode writes it, and an input accepts every form a client may send.
    private static func numberOrBytesSchema(_ validator: Validator, mode: Mode) -> ConvexValue {
        switch validator {
        case .float64:
            let special: ConvexValue =
                mode == .output(.encoded)
                ? wrapper("$float") : ["type": "string", "enum": ["NaN", "Infinity", "-Infinity"]]
            if mode == .input { return ["oneOf": [["type": "number"], wrapper("$float")]] }
            return ["oneOf": [["type": "number"], special]]
        case .int64:
            let integer: ConvexValue = ["type": "integer", "format": "int64"]
            let digits: ConvexValue = ["type": "string", "pattern": "^-?[0-9]+$"]
            switch mode {
            case .input: return ["oneOf": [integer, digits, wrapper("$integer")], "description": "An int64"]
            case .output(.plain): return integer
            case .output(.clean): return digits
            case .output(.encoded): return wrapper("$integer")
            }
        default:
            switch mode {
            case .input: return ["oneOf": [base64String, wrapper("$bytes")], "description": "Bytes"]
            case .output(.encoded): return wrapper("$bytes")
            case .output: return base64String
            }
        }
    }

    /// An object's schema: its fields' schemas, the fields that are not optional required, no others allowed.
    private static func objectSchema(_ fields: [String: Validator], mode: Mode) -> ConvexValue {
        var properties: [String: ConvexValue] = [:]
        var required: [ConvexValue] = []
        for (name, field) in fields {
            properties[name] = schema(field.unwrappingOptional, mode: mode)
            if !field.isOptional { required.append(.string(name)) }
        }
        required.sort { $0.convexJSONString < $1.convexJSONString }
        var object: [String: ConvexValue] = [
            "type": "object", "properties": .object(properties), "additionalProperties": false,
        ]
        if !required.isEmpty { object["required"] = .array(required) }
        return .object(object)
    }

    private static func literalInEncodedMode(_ value: ConvexValue) -> ConvexValue {
        switch value {
        case .int64(let i): ["$integer": .string(Base64.encode(i.littleEndianBytes))]
        case .bytes(let d): ["$bytes": .string(Base64.encode(Array(d)))]
        default: value
        }
    }
}

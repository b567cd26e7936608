import ConvexValues
import FuzzSupport

/// What must hold for any bytes given to the Convex JSON parser and the streaming transcoder:
///
/// - both accept exactly the same inputs, and refuse the others with the same error (path and message);
/// - an accepted value is within Convex's limits (nesting, array length, field count, size);
/// - the transcoder's output in each mode is the value writer's output for the same value (compared as parsed JSON,
///   since the transcoder keeps the input's key order and the writer sorts), and the value's own Convex JSON reads
///   back to the same value and transcodes byte for byte to the writer's output.
enum ConvexJSONProperties {
    static func check(_ bytes: [UInt8]) {
        let parsed: Result<ConvexValue, ConvexValueError> = Result { () throws(ConvexValueError) in
            try ConvexValue(convexJSON: bytes)
        }
        for mode in OutputFormat.allCases {
            let rendered: Result<[UInt8], ConvexValueError> = Result { () throws(ConvexValueError) in
                try ConvexJSONTranscoder.render(bytes, mode: mode)
            }
            switch (parsed, rendered) {
            case (.failure(let parseError), .failure(let renderError)):
                require(
                    "\(parseError)" == "\(renderError)",
                    "parser and transcoder (\(mode)) refuse \(excerpt(bytes)) differently: "
                        + "'\(parseError)' vs '\(renderError)'")
            case (.success, .failure(let error)):
                fail("the parser accepts \(excerpt(bytes)) but the transcoder (\(mode)) refuses it: \(error)")
            case (.failure(let error), .success):
                fail("the transcoder (\(mode)) accepts \(excerpt(bytes)) but the parser refuses it: \(error)")
            case (.success(let value), .success(let output)):
                checkAccepted(value, output: output, mode: mode, input: bytes)
            }
        }
    }

    static func checkAccepted(_ value: ConvexValue, output: [UInt8], mode: OutputFormat, input: [UInt8]) {
        do {
            try value.checkLimits()
        } catch {
            fail("accepted \(excerpt(input)) is over a limit: \(error)")
        }
        let written = value.json(mode: mode)
        let outputTree = try? ConvexValue(envelopeJSON: output)
        let writtenTree = try? ConvexValue(envelopeJSON: written)
        require(outputTree != nil, "the transcoder's \(mode) output is not JSON: \(excerpt(output))")
        require(
            outputTree == writtenTree,
            "transcoder and writer disagree in \(mode) for \(excerpt(input)): \(excerpt(output)) vs \(excerpt(written))"
        )
        let encoded = value.convexJSON()
        require(
            (try? ConvexValue(convexJSON: encoded)) == value,
            "the Convex JSON of \(excerpt(input)) does not read back: \(excerpt(encoded))")
        require(
            (try? ConvexJSONTranscoder.render(encoded, mode: mode)) == written,
            "the transcoder's \(mode) output of sorted Convex JSON differs from the writer's for \(excerpt(encoded))")
    }
}

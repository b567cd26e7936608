import Foundation

/// Renders Convex JSON bytes in another ``OutputFormat`` without building a value tree.
///
/// The transcoder reads its input once, checking every rule ``ConvexValue/init(convexJSON:)-(Bytes)`` checks (JSON
/// syntax, UTF-8, wrappers, field names, duplicate fields, retired types, nesting, array length, field count and
/// total size) while writing the output. Object keys keep their input order (Convex sends them sorted).
/// When the input is invalid, the error is the one the value parser reports for the same bytes, so it names the
/// same JSON path and message.
public enum ConvexJSONTranscoder {
    /// Renders Convex JSON in `mode`.
    /// - Parameters:
    ///   - convexJSON: Convex JSON (`convex_encoded_json`) bytes.
    ///   - mode: the output mode; `plain` by default.
    /// - Returns: the JSON bytes in `mode`.
    /// - Throws: `ConvexValueError` naming the JSON path of the first bad value.
    public static func render<Bytes: Collection>(
        _ convexJSON: Bytes,
        mode: OutputFormat = .plain
    ) throws(ConvexValueError) -> [UInt8] where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        try render(convexJSON, mode: mode, appendingTo: &out)
        return out
    }

    /// Renders Convex JSON in `mode`, appending to `out`. On error `out` is left unchanged.
    /// - Throws: `ConvexValueError` naming the JSON path of the first bad value.
    public static func render<Bytes: Collection>(
        _ convexJSON: Bytes,
        mode: OutputFormat = .plain,
        appendingTo out: inout [UInt8]
    ) throws(ConvexValueError) where Bytes.Element == UInt8 {
        let result: Result<Void, ConvexValueError>
        if let r = convexJSON.withContiguousStorageIfAvailable({ render(buffer: $0, mode: mode, into: &out) }) {
            result = r
        } else {
            result = Array(convexJSON).withUnsafeBufferPointer { render(buffer: $0, mode: mode, into: &out) }
        }
        try result.get()
    }

    static func render(
        buffer: UnsafeBufferPointer<UInt8>,
        mode: OutputFormat,
        into out: inout [UInt8]
    ) -> Result<Void, ConvexValueError> {
        if let rendered = fastRender(buffer: buffer, mode: mode) {
            if out.isEmpty { out = rendered } else { out.append(contentsOf: rendered) }
            return .success(())
        }
        // The single-pass reader only knows that the input is not one it can stream; the value parser explains why
        // with a path and message. Should the parser accept the input after all (a case the streaming reader leaves
        // to it, such as escapes inside a wrapper's base64), render the parsed value.
        switch ConvexJSONParser.parse(buffer) {
        case .failure(let error):
            return .failure(error)
        case .success(let value):
            value.appendJSON(mode: mode, to: &out)
            return .success(())
        }
    }

    /// Streams `buffer` into a new array, or nil when the input must go through the value parser.
    /// The output is written straight into the array's storage, sized from the input; only output larger than that
    /// estimate (short numbers growing to `1.0`, `-0` to a `$float` wrapper) spills to a growing buffer.
    static func fastRender(buffer: UnsafeBufferPointer<UInt8>, mode: OutputFormat) -> [UInt8]? {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return nil }
        let capacity = buffer.count + buffer.count / 4 + 64
        var streamed = false
        var spilled: OutputBuffer?
        var result = [UInt8](unsafeUninitializedCapacity: capacity) { storage, initialized in
            var t = StreamingTranscoder(
                base: base, end: buffer.count, mode: mode,
                out: OutputBuffer(borrowing: storage.baseAddress!, capacity: capacity))
            defer { t.deallocate() }
            initialized = 0
            do throws(Bail) {
                try t.run()
            } catch {
                return
            }
            streamed = true
            if t.out.owned {
                spilled = t.out.detach()
            } else {
                initialized = t.out.count
            }
        }
        guard streamed else { return nil }
        if let spilled {
            result = Array(UnsafeBufferPointer(start: spilled.ptr, count: spilled.count))
            spilled.deallocate()
        }
        return result
    }

    /// Test hook: whether `buffer` streams, appending the output to `out` when it does.
    static func fastRender(buffer: UnsafeBufferPointer<UInt8>, mode: OutputFormat, into out: inout [UInt8]) -> Bool {
        guard let rendered = fastRender(buffer: buffer, mode: mode) else { return false }
        out.append(contentsOf: rendered)
        return true
    }
}

/// The streaming reader gives up; the value parser then reports the precise error.
struct Bail: Error {}

#if canImport(Glibc)
    import Glibc
#endif

/// The fuzz targets' one way to fail: names the broken property on standard error and aborts, which libFuzzer
/// records as a crash (the input is saved as `crash-<hash>`) and the replay runner reports as a failed input.
public func require(
    _ condition: Bool, _ property: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    guard !condition else { return }
    fail(property(), file: file, line: line)
}

/// Fails the current input: see ``require(_:_:file:line:)``.
public func fail(_ property: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    let input = replayedInput.map { " (input \($0))" } ?? ""
    let text = "FUZZ PROPERTY BROKEN at \(file):\(line)\(input): \(property)\n"
    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    abort()
}

/// A short, printable excerpt of bytes for a failure message.
public func excerpt(_ bytes: some Sequence<UInt8>, limit: Int = 300) -> String {
    var text = ""
    for byte in bytes.prefix(limit) {
        if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\\") {
            text.unicodeScalars.append(Unicode.Scalar(byte))
        } else {
            text += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }
    }
    return text
}

/// libFuzzer's input as an array.
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// The entry of a target whose properties read the package's internal types (`@testable import`), in a release build,
/// which compiles the package without testing enabled: says so and exits 2. scripts/fuzz builds the targets in debug.
public func internalTypesNeedADebugBuild(_ name: String) -> Never {
    let text = "\(name) reads the package's internal types, which only a debug build exposes: run scripts/fuzz\n"
    _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    exit(2)
}

import FuzzSupport

/// libFuzzer's entry point (scripts/fuzz builds this target with `-sanitize=fuzzer,address`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    CredentialProperties.check(fuzzInput(data, size))
    return 0
}

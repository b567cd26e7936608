import CMicroHTTPD
import CMicroHTTPDShim

/// What a request's head must pass before anything reads its fields: every byte accounted for (``HeadAccounting``)
/// and a body length read as any proxy reads it (``BodyFraming``), in one pass over the fields libmicrohttpd parsed.
struct RequestHeadCheck {
    /// `nil` when libmicrohttpd does not tell where the head lies.
    private var accounting: HeadAccounting?
    private(set) var framing = BodyFraming()
    /// Why the head is refused, if it is.
    private(set) var rejection: HTTPServerRejection?

    /// Checks the head `connection` has just parsed, at its request's first access-handler call (on its thread); takes
    /// the target the URI log callback noted.
    static func run(
        _ connection: ConnectionHandle, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?
    ) -> RequestHeadCheck {
        let target = connection.context?.pendingTargetBytes
        connection.context?.pendingTargetBytes = nil
        let headSize = cmhd_connection_header_size(connection.raw)
        var check = RequestHeadCheck()
        if let method, let version, headSize > 0 {
            check.accounting = HeadAccounting(
                head: UnsafeRawBufferPointer(start: method, count: headSize), target: target,
                version: UnsafeRawPointer(version))
        }
        withUnsafeMutablePointer(to: &check) { pointer in
            _ = MHD_get_connection_values_n(connection.raw, MHD_ValueKind.HEADER_KIND, headCheckThunk, pointer)
        }
        check.rejection = check.accounting?.finish() ?? check.framing.rejection
        return check
    }

    /// One header field, in the order libmicrohttpd lists them (received).
    mutating func field(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        if let nameStart = name.baseAddress, let valueStart = value.baseAddress {
            accounting?.field(name: nameStart, nameCount: name.count, value: valueStart, valueCount: value.count)
        }
        framing.field(name: name, value: value)
    }
}

/// `Accept`, as far as the gateway reads it: whether a request asks for an event stream.
public enum Accept {
    /// Whether an `Accept` header asks for Server-Sent Events.
    public static func acceptsEventStream(_ accept: String?) -> Bool {
        guard let accept else { return false }
        return FieldValue.of(accept) { acceptsEventStream($0) }
    }

    /// The same over the field's bytes (the hot path reads them in place): `text/event-stream` anywhere in it, in
    /// any letter case.
    public static func acceptsEventStream(_ field: FieldValue?) -> Bool {
        let wanted = eventStreamType
        guard let accept = field?.bytes, accept.count >= wanted.count else { return false }
        for start in 0...(accept.count - wanted.count) {
            var index = 0
            while index < wanted.count, lowercased(accept[start + index]) == wanted[index] { index += 1 }
            if index == wanted.count { return true }
        }
        return false
    }

    private static let eventStreamType = Array("text/event-stream".utf8)

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}

/// The request-body bytes the server holds at once, against a bound (``HTTPServerConfiguration/maxBodyBytesInFlight``).
/// A plain value, tested without I/O; the server holds it under a lock.
///
/// Bytes are counted where the server buffers them, chunk by chunk as they arrive, and given back when their request
/// is over (answered, refused, or its client gone): a body, and what the handler makes of it, lives until then. A
/// body that declares its length is refused before it is read when that length does not fit beside the bytes held
/// now; nothing is set aside for it, so a client that declares a large body and sends nothing holds nothing. A body
/// whose bytes stop fitting as they arrive (another body took the room meanwhile, or it declared no length) gives
/// back what it held at once and is refused when it has arrived.
struct BodyBudget: Sendable, Equatable {
    /// The most bytes held at once; `nil`: no bound.
    let limit: Int?
    /// The bytes held now.
    private(set) var inFlight = 0

    init(limit: Int?) {
        self.limit = limit
    }

    /// Whether a body that declares `length` bytes may start: it fits beside the bytes held now.
    func admits(declared length: Int) -> Bool {
        guard let limit else { return true }
        return length <= limit - inFlight
    }

    /// Takes `count` more bytes of a body. Returns whether they fit; when they do not, nothing is taken.
    mutating func take(_ count: Int) -> Bool {
        if let limit, count > limit - inFlight { return false }
        inFlight += count
        return true
    }

    /// Gives back `count` bytes taken before.
    mutating func release(_ count: Int) {
        assert(count >= 0 && count <= inFlight, "released more body bytes than were taken")
        inFlight -= min(max(0, count), inFlight)
    }
}

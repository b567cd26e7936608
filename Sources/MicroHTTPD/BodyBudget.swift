/// The request-body bytes the server holds at once, against a bound (``HTTPServerConfiguration/maxBodyBytesInFlight``)
/// and against each client address's share of it (``HTTPServerConfiguration/maxBodyBytesPerAddress``).
/// A plain value, tested without I/O; the server holds it under a lock.
///
/// Bytes are counted where the server buffers them, chunk by chunk as they arrive, and given back when their request
/// is over (answered, refused, or its client gone): a body, and what the handler makes of it, lives until then. A
/// body that declares its length is refused before it is read when that length does not fit beside the bytes held
/// now; nothing is set aside for it, so a client that declares a large body and sends nothing holds nothing. A body
/// whose bytes stop fitting as they arrive (another body took the room meanwhile, or it declared no length) gives
/// back what it held at once and is refused when it has arrived.
///
/// A body that fits neither its address's share nor the bound is refused for the share: the client's own bodies are
/// the cause it can act on.
struct BodyBudget: Sendable, Equatable {
    /// Whether bytes fit, and if not, which limit they are over.
    enum Fit: Sendable, Equatable {
        case fits
        /// Over the share of their client address.
        case overShare
        /// Over the bound on every body held at once.
        case overBound

        /// The server's answer to a body that does not fit.
        var rejection: HTTPServerRejection? {
            switch self {
            case .fits: nil
            case .overShare: .bodyShareReached
            case .overBound: .bodiesInFlightLimitReached
            }
        }
    }

    /// The most bytes held at once; `nil`: no bound.
    let limit: Int?
    /// The most bytes one client address may hold at once; `nil`: no share. A body whose address is unknown counts
    /// against the bound only.
    let shareLimit: Int?
    /// The bytes held now.
    private(set) var inFlight = 0
    /// The bytes held now by each address (an address that holds none is absent); kept only with a share.
    private(set) var heldByAddress: [ClientAddressKey: Int] = [:]

    init(limit: Int?, shareLimit: Int? = nil) {
        self.limit = limit
        self.shareLimit = shareLimit
    }

    /// Whether a body that declares `length` bytes may start: it fits beside the bytes held now, its address's and
    /// everyone's.
    func admits(declared length: Int, from address: ClientAddressKey? = nil) -> Fit {
        fit(length, from: address)
    }

    /// Takes `count` more bytes of a body from `address`. When they do not fit, nothing is taken.
    mutating func take(_ count: Int, from address: ClientAddressKey? = nil) -> Fit {
        let fit = fit(count, from: address)
        guard fit == .fits else { return fit }
        inFlight += count
        if shareLimit != nil, let address, count > 0 {
            heldByAddress[address, default: 0] += count
        }
        return .fits
    }

    /// Gives back `count` bytes taken before from `address`.
    mutating func release(_ count: Int, from address: ClientAddressKey? = nil) {
        assert(count >= 0 && count <= inFlight, "released more body bytes than were taken")
        inFlight -= min(max(0, count), inFlight)
        guard shareLimit != nil, let address, let held = heldByAddress[address] else { return }
        assert(count <= held, "released more body bytes than the address took")
        heldByAddress[address] = held > count ? held - count : nil
    }

    private func fit(_ count: Int, from address: ClientAddressKey?) -> Fit {
        if let shareLimit, let address, count > shareLimit - heldByAddress[address, default: 0] { return .overShare }
        if let limit, count > limit - inFlight { return .overBound }
        return .fits
    }
}

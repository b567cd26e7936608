/// The open connections of each client address against a share (``HTTPServerConfiguration/maxConnectionsPerAddress``).
/// A plain value, tested without I/O; ``ConnectionGuard`` holds it under a lock.
struct AddressShares: Sendable, Equatable {
    /// The most connections one address may hold.
    let limit: Int
    /// The connections counted now, by address (an address with none is absent).
    private(set) var open: [ClientAddressKey: Int] = [:]

    init(limit: Int) {
        self.limit = limit
    }

    /// A connection from `address` was accepted. Returns whether it fits the address's share, and is then counted
    /// (hand it back to ``closed(_:)``); one that does not is not counted.
    mutating func opened(_ address: ClientAddressKey) -> Bool {
        let count = open[address, default: 0]
        guard count < limit else { return false }
        open[address] = count + 1
        return true
    }

    /// A connection counted for `address` closed.
    mutating func closed(_ address: ClientAddressKey) {
        guard let count = open[address] else {
            assertionFailure("closed a connection that was not counted")
            return
        }
        open[address] = count > 1 ? count - 1 : nil
    }
}

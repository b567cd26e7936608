import Testing

@testable import MicroHTTPD

/// What one client address may hold (``ClientAddressKey``, ``AddressShares``, ``BodyBudget``'s shares), without I/O.
@Suite("Per-address shares")
struct AddressSharesTests {
    func key(_ text: String) throws -> ClientAddressKey {
        try #require(ClientAddressKey(numeric: text))
    }

    // The events that return something, outside `#expect`, which cannot call a mutating method.
    func opened(_ shares: inout AddressShares, _ address: ClientAddressKey) -> Bool {
        shares.opened(address)
    }

    func take(_ budget: inout BodyBudget, _ count: Int, from address: ClientAddressKey?) -> BodyBudget.Fit {
        budget.take(count, from: address)
    }

    @Test(
        "an IPv4 address is its own key, an IPv6 address its /64, a mapped IPv4 address its IPv4 one",
        arguments: [
            ("192.0.2.1", "192.0.2.1"),
            ("::ffff:192.0.2.1", "192.0.2.1"),
            ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
            ("2001:db8:1:2::9", "2001:db8:1:2::/64"),
            ("::1", "0:0:0:0::/64"),
        ])
    func keys(address: String, expected: String) throws {
        #expect(try key(address).description == expected)
    }

    @Test("keys group as they should")
    func grouping() throws {
        #expect(try key("2001:db8:1:2::1") == key("2001:db8:1:2:ffff::1"))
        #expect(try key("2001:db8:1:2::1") != key("2001:db8:1:3::1"))
        #expect(try key("127.0.0.1") != key("127.0.0.2"))
        #expect(try key("::ffff:127.0.0.1") == key("127.0.0.1"))
        // 0.0.0.0 as IPv4 and ::/64 as IPv6 are of different families.
        #expect(try key("0.0.0.0") != key("::"))
        #expect(ClientAddressKey(numeric: "localhost") == nil)
    }

    @Test(
        "an address holds its share of connections; a refused one counts for nothing; a closed one gives its slot back")
    func connections() throws {
        var shares = AddressShares(limit: 2)
        let one = try key("192.0.2.1")
        let other = try key("192.0.2.2")
        #expect(opened(&shares, one))
        #expect(opened(&shares, one))
        #expect(!opened(&shares, one))
        #expect(!opened(&shares, one))
        #expect(opened(&shares, other), "another address has its own share")
        #expect(shares.open[one] == 2)
        shares.closed(one)
        #expect(opened(&shares, one))
        #expect(!opened(&shares, one))
        shares.closed(one)
        shares.closed(one)
        shares.closed(other)
        #expect(shares.open.isEmpty)
    }

    @Test("a body over its address's share is refused for the share while the bound has room; others still fit")
    func bodyShares() throws {
        var budget = BodyBudget(limit: 1000, shareLimit: 400)
        let one = try key("192.0.2.1")
        let other = try key("192.0.2.2")
        let third = try key("192.0.2.3")
        #expect(budget.admits(declared: 400, from: one) == .fits)
        #expect(budget.admits(declared: 401, from: one) == .overShare)
        #expect(take(&budget, 300, from: one) == .fits)
        #expect(budget.admits(declared: 101, from: one) == .overShare)
        #expect(take(&budget, 101, from: one) == .overShare)
        #expect(budget.inFlight == 300, "a refused take takes nothing")
        #expect(take(&budget, 400, from: other) == .fits)
        #expect(take(&budget, 100, from: one) == .fits)
        // 800 held: the bound refuses what the share would allow.
        #expect(take(&budget, 250, from: third) == .overBound)
        // A body whose address is unknown counts against the bound only.
        #expect(take(&budget, 200, from: nil) == .fits)
        #expect(take(&budget, 1, from: nil) == .overBound)
        // Over both: the share is named, the client's own doing.
        #expect(budget.admits(declared: 500, from: one) == .overShare)
        #expect(BodyBudget.Fit.overShare.rejection == .bodyShareReached)
        #expect(BodyBudget.Fit.overBound.rejection == .bodiesInFlightLimitReached)
        #expect(BodyBudget.Fit.fits.rejection == nil)
        budget.release(400, from: one)
        budget.release(400, from: other)
        budget.release(200, from: nil)
        #expect(budget.inFlight == 0)
        #expect(budget.heldByAddress.isEmpty)
        #expect(budget.admits(declared: 400, from: one) == .fits)
    }

    @Test("without a share, addresses are not kept")
    func noShare() throws {
        var budget = BodyBudget(limit: 100)
        let one = try key("192.0.2.1")
        #expect(take(&budget, 100, from: one) == .fits)
        #expect(budget.heldByAddress.isEmpty)
        #expect(take(&budget, 1, from: one) == .overBound)
        budget.release(100, from: one)
        #expect(budget.inFlight == 0)
    }
}

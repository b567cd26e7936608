import Logging
import Synchronization

/// Wrong API keys, per client address, so that a key cannot be guessed at the speed of the network and an operator
/// sees the guessing: each is counted in `/metrics`, an address is named in the log at most once a minute (with how
/// many it sent, never a key), and an address that has sent ``allowedPerMinute`` wrong keys in the current minute gets
/// 429 `RateLimited` for every request that needs the key until the minute is over, whatever key it sends. A missing
/// key is counted but never held against an address (a client that forgot the header is not guessing). At most
/// ``maxAddresses`` addresses are remembered; a minute's quiet forgets one.
final class WrongAPIKeys: Sendable {
    static let allowedPerMinute = 20
    static let maxAddresses = 10_000
    static let window = Duration.seconds(60)

    private struct Entry {
        var windowStart: Duration
        var count = 0
        /// Wrong keys of this window not yet named in the log.
        var unlogged = 0
        var lastLogged: Duration?
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let clock: GatewayClock
    private let logger: Logger

    init(clock: GatewayClock, logger: Logger) {
        self.clock = clock
        self.logger = logger
    }

    /// Seconds until `address` may try a key again; `nil` when it may now.
    func refusal(for address: String) -> Int? {
        let now = clock.now
        return entries.withLock { entries in
            guard let entry = entries[address], now - entry.windowStart < Self.window,
                entry.count >= Self.allowedPerMinute
            else { return nil }
            return max(1, Int((Self.window - (now - entry.windowStart)).seconds.rounded(.up)))
        }
    }

    /// `address` sent a wrong key.
    func record(_ address: String) {
        let now = clock.now
        let logLine = entries.withLock { entries -> Int? in
            if entries[address] == nil, entries.count >= Self.maxAddresses {
                entries = entries.filter { now - $0.value.windowStart < Self.window }
                guard entries.count < Self.maxAddresses else { return nil }
            }
            var entry = entries[address] ?? Entry(windowStart: now)
            if now - entry.windowStart >= Self.window {
                entry.windowStart = now
                entry.count = 0
            }
            entry.count += 1
            entry.unlogged += 1
            var logged: Int?
            if entry.lastLogged.map({ now - $0 >= Self.window }) ?? true {
                logged = entry.unlogged
                entry.unlogged = 0
                entry.lastLogged = now
            }
            entries[address] = entry
            return logged
        }
        if let count = logLine {
            logger.warning(
                "Wrong API keys from a client address (X-API-Key); the key is not logged",
                metadata: [
                    "client.address": "\(address)", "wrong_keys": "\(count)",
                    "limit_per_minute": "\(Self.allowedPerMinute)",
                ])
        }
    }
}

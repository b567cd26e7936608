import Synchronization

/// The `event: transition` bytes made of one transition that many streams share, kept by what each stream holds once
/// it has the transition. Streams with the same subscription ids that end up holding the same results (the same
/// ``ResumeID``) get the same event, byte for byte, so it is made once for all of them: the usual case of many browser
/// pages open on the same page, one of whose queries changed. ``StreamWire`` uses it for streams that read values (a
/// stream that reads patches chooses them by what it held before).
///
/// A stream finds its event by a 64-bit fingerprint of what it holds, then compares the ids and results in full: a
/// fingerprint shared by two different streams only costs the second one making its own event.
package final class TransitionEventCache: Sendable {
    private struct Made {
        let ids: [String]
        let resume: ResumeID
        let bytes: [UInt8]
    }

    private struct Table {
        var entries: [UInt64: Made] = [:]
        var bytes = 0
    }

    /// Shapes kept at most, and their events' bytes at most: past either, streams of a new shape make their own
    /// events. (A transition lives until its delivery is over, and with it what it keeps: streams that share little,
    /// each holding other results, must not make it keep one large event per stream.)
    static let capacity = 1024
    static let byteBudget = 4 << 20

    private let made = Mutex(Table())

    package init() {}

    /// The event of a stream with subscription `ids` that holds `resume` once it has the transition (`idsHash`: the
    /// hash of `ids`, made once per stream), made by `make` the first time.
    func bytes(ids: [String], idsHash: Int, resume: ResumeID, _ make: () -> [UInt8]) -> [UInt8] {
        let key = Self.fingerprint(idsHash: idsHash, resume: resume)
        let found = made.withLock { made -> [UInt8]? in
            guard let entry = made.entries[key], entry.resume == resume, entry.ids == ids else { return nil }
            return entry.bytes
        }
        if let found { return found }
        let bytes = make()
        // The held results are copied into storage of their own: the stream's array stays unshared, so its next
        // change updates it in place.
        let entry = Made(
            ids: ids, resume: ResumeID(version: resume.version, held: resume.held.map { $0 }), bytes: bytes)
        made.withLock { made in
            guard made.entries.count < Self.capacity, made.bytes + bytes.count <= Self.byteBudget,
                made.entries[key] == nil
            else { return }
            made.entries[key] = entry
            made.bytes += bytes.count
        }
        return bytes
    }

    /// How many shapes are kept (tests).
    var count: Int { made.withLock { $0.entries.count } }

    private static func fingerprint(idsHash: Int, resume: ResumeID) -> UInt64 {
        let multiplier: UInt64 = 0x9E37_79B9_7F4A_7C15
        var fingerprint = (UInt64(bitPattern: Int64(idsHash)) ^ resume.version.value) &* multiplier
        for held in resume.held {
            fingerprint = (fingerprint ^ (held?.value ?? 0x5BD1_E995)) &* multiplier
            fingerprint ^= fingerprint >> 29
        }
        return fingerprint
    }
}

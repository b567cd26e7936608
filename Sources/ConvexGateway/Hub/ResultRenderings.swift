import ConvexValues
import Synchronization

/// What is made of one result for the streams and `GET`s that read it: per output mode, its update (the rendered
/// value, with where its event bytes are kept) and, once a stream that reads patches asked, its JSON Patch against the
/// result it replaced. Bound: one update per output mode (three), for as long as anything holds the result; a new
/// result of the subscription starts with a new, empty one.
///
/// The hub hands it out with the result (``HubState/NewResult``, ``HubState/current(_:)``); the render stage
/// (``SubscriptionHub/transition(_:format:patches:_:)``, ``SubscriptionHub/currentBody(for:format:)``) fills it outside
/// the hub's lock, and the hub never reads it. What it makes is made under its own lock, so threads that deliver the
/// same result at once render it once.
final class ResultRenderings: Sendable {
    private struct Made {
        var update: SubscriptionUpdate
        /// Whether a patch was asked for (made, or found not worth making: ``SubscriptionUpdate/patch``).
        var patchAsked: Bool
    }

    private let made = Mutex<[OutputFormat: Made]>([:])

    /// The update in `format`, made by `make` the first time; with `patch` (a stream that reads patches, the result
    /// having replaced another), the update's patch made by it the first time.
    func update(
        _ format: OutputFormat, patch: ((SubscriptionUpdate) -> ValuePatch?)? = nil,
        make: () -> SubscriptionUpdate
    ) -> SubscriptionUpdate {
        made.withLock { made in
            if let found = made[format], found.patchAsked || patch == nil { return found.update }
            var entry = made[format] ?? Made(update: make(), patchAsked: false)
            if let patch {
                entry.update.patch = patch(entry.update)
                entry.patchAsked = true
            }
            made[format] = entry
            return entry.update
        }
    }

    /// How many output modes have an update (tests).
    var count: Int { made.withLock { $0.count } }
}

/// When a wait for the client's view (``ClientCore/waitForView(atLeast:timeout:)``) asks the deployment for its
/// latest snapshot: at once, then again after 50 ms, 100 ms, 200 ms and 400 ms while the view is short of the target,
/// and no more; after that the wait only waits (a transition still moves the view) until its deadline. A plain value,
/// tested without a clock.
///
/// A commit the deployment has made is in the snapshot it answers an ask with, but for the moment it takes to publish
/// it: the asks after the first are for that lag. A target still not reached after them is no commit the deployment
/// has made (a timestamp from the future, or from another deployment), and asking on would only have every request
/// that names it send an empty query-set update a second until its deadline.
struct ViewAsks: Sendable {
    /// The asks of one wait.
    static let limit = 5

    private(set) var asked = 0
    private var interval = Duration.milliseconds(50)

    /// The wait's next step at `now`: whether to ask, and when to look at the view again (at the latest,
    /// `deadline`).
    mutating func next(now: Duration, deadline: Duration) -> (ask: Bool, wakeAt: Duration) {
        guard asked < Self.limit else { return (false, deadline) }
        asked += 1
        defer { interval = interval * 2 }
        return (true, min(now + interval, deadline))
    }
}

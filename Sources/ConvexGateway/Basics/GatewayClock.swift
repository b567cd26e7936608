import Convex

/// The gateway's one clock: every stage reads time from it (keep-warm, idle connections, rate limit, spec refresh).
public typealias GatewayClock = ElapsedClock

/// What the access stage (``AccessControl``) asks of a route: whether it needs the API key, and whether the rate limit
/// counts it (the routes that act for the caller). Each row of the route table (``Route/table``,
/// Pipeline/Dispatch.swift) names its class.
enum AccessClass: Sendable {
    /// Probes, the public contract and the browser client: no API key (the functions document, a form of the
    /// contract's route, asks for it in its stage), no rate limit.
    case open
    /// The gateway's own protected routes (`/metrics`, and any path that matches no route): the API key only.
    case keyed
    /// The API key, and the rate limit counts it: a route that acts for the caller without calling a function
    /// (`POST /stream-tickets`).
    case rateLimited
    /// A function call or stream, acting for the caller: the API key, and the rate limit counts it.
    case functionCall

    var needsAPIKey: Bool { self != .open }
    var isRateLimited: Bool { self == .rateLimited || self == .functionCall }
}

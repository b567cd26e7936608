/// The header field names the gateway reads and writes, each written once, in its registered case. Field names are
/// case-insensitive, and so is every lookup (`HTTPRequestHead.header(_:)` reads libmicrohttpd's table without case;
/// `GatewayRequest.header(_:)` lowercases both sides), so these constants serve both the hot path and full handling.
public enum HeaderName {
    public static let accept = "Accept"
    public static let acceptEncoding = "Accept-Encoding"
    public static let accessControlAllowCredentials = "Access-Control-Allow-Credentials"
    public static let accessControlAllowHeaders = "Access-Control-Allow-Headers"
    public static let accessControlAllowMethods = "Access-Control-Allow-Methods"
    public static let accessControlAllowOrigin = "Access-Control-Allow-Origin"
    public static let accessControlExposeHeaders = "Access-Control-Expose-Headers"
    public static let accessControlMaxAge = "Access-Control-Max-Age"
    public static let accessControlRequestHeaders = "Access-Control-Request-Headers"
    public static let accessControlRequestMethod = "Access-Control-Request-Method"
    public static let authorization = "Authorization"
    public static let cacheControl = "Cache-Control"
    public static let contentEncoding = "Content-Encoding"
    public static let contentSecurityPolicy = "Content-Security-Policy"
    public static let contentType = "Content-Type"
    /// The oldest snapshot a caller accepts (read-your-writes across replicas).
    public static let convexMinTimestamp = "Convex-Min-Timestamp"
    public static let convexSessionId = "Convex-Session-Id"
    /// The snapshot an answer was read at.
    public static let convexTimestamp = "Convex-Timestamp"
    public static let cookie = "Cookie"
    public static let eTag = "ETag"
    public static let host = "Host"
    public static let ifNoneMatch = "If-None-Match"
    public static let lastEventID = "Last-Event-ID"
    public static let origin = "Origin"
    public static let prefer = "Prefer"
    public static let preferenceApplied = "Preference-Applied"
    /// W3C Trace Context: the caller's trace and span, and its vendors' trace state.
    public static let traceparent = "traceparent"
    public static let tracestate = "tracestate"
    public static let referrerPolicy = "Referrer-Policy"
    public static let retryAfter = "Retry-After"
    public static let secFetchSite = "Sec-Fetch-Site"
    public static let vary = "Vary"
    public static let wwwAuthenticate = "WWW-Authenticate"
    public static let xAPIKey = "X-API-Key"
    public static let xAccelBuffering = "X-Accel-Buffering"
    public static let xContentTypeOptions = "X-Content-Type-Options"
}

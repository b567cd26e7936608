import HTTPFields

/// The quick responder's decision (HotQueries.swift), asked by full handling too: whether the answer to a request
/// depends on its target (path and query) alone. Then a `GET` of a remembered target can be answered with the response
/// prepared for the target's current value, and full handling remembers targets only for such requests, so the two
/// paths cannot drift.
///
/// It does when the request is a `GET` that names no caller (no `Authorization`, no auth cookie: the call is
/// anonymous) and does not ask for an event stream. The representation fields (`If-None-Match`, `Accept-Encoding`) and
/// the access stage's headers vary the answer in ways both paths apply by the same rules (ConditionalGetAndGzip/,
/// Access/); a long-poll (`Prefer: wait`) is left to full handling, which can wait.
enum TargetOnlyAnswer {
    static func applies(method: String, fields: some HeaderFields, authCookie: String?) -> Bool {
        guard method == "GET", fields.withField("Authorization", { $0 == nil }),
            !fields.withField("Accept", Accept.acceptsEventStream)
        else { return false }
        guard let authCookie else { return true }
        return fields.withField("Cookie") { field in
            field.map { CookieHeader.value(named: authCookie, in: $0.text) == nil } ?? true
        }
    }
}

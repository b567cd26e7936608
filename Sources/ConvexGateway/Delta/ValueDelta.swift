import ConvexValues

/// Changes sent as JSON Patches on event streams that ask for them with `delta=json-patch`.
///
/// After the first full value, a change is sent as `event: patch` with
/// `{"base": "<hash of the previous value>", "v": "<hash of the new value>", "ops": [RFC 6902 operations]}`
/// (and `"sub"` on a multi-subscription stream), or as the stream's usual full value whenever the patch would not be
/// smaller than half of it, or the reader does not hold the previous value. Hashes are the lowercase hex of the
/// gateway's 64-bit value hash, as at the end of a single-subscription event's `id`.
package enum ValueDelta {
    /// The `delta` query parameter of the stream routes.
    package static let parameter = "delta"
    static let jsonPatch = "json-patch"

    /// Reads the `delta` parameters of a stream URL: whether patches were asked for.
    /// - Throws: 400 `InvalidDelta` for another value, or for the parameter given twice.
    static func wantsPatches(_ values: [String?]) throws(GatewayError) -> Bool {
        guard let last = values.last else { return false }
        guard values.count == 1, last == jsonPatch else {
            throw GatewayError.badRequest(
                "Give 'delta' once, as delta=json-patch (or leave it out for full values)", code: .invalidDelta)
        }
        return true
    }

    /// The patch from `previous` to `snapshot`, when both are values and the patch is smaller than half of `body`
    /// (the new value's JSON in `format`).
    static func patch(
        from previous: CurrentResult, to current: CurrentResult, body: [UInt8],
        render: (ConvexValue) -> [UInt8]
    ) -> ValuePatch? {
        guard case .value(let old) = previous.result, case .value(let new) = current.result else { return nil }
        var fields: [UInt8] = []
        fields += #""base":""#.utf8
        previous.hash.append(to: &fields)
        fields += #"","v":""#.utf8
        current.hash.append(to: &fields)
        fields += #"","ops":"#.utf8
        let budget = body.count / 2 - fields.count - 3
        guard budget > 2,
            let operations = JSONPatch.render(
                ValueDiff.operations(from: old, to: new), budget: budget, value: render)
        else { return nil }
        fields += operations
        return ValuePatch(base: previous.hash, result: current.hash, fields: fields)
    }
}

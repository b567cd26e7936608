/// A change of one subscription's value as a JSON Patch (``ValueDelta`` makes it), made once per change and output
/// mode and shared by every stream that reads patches.
package struct ValuePatch: Sendable {
    /// The hash of the value the patch applies to.
    package var base: ContentHash
    /// The hash of the value it makes.
    package var result: ContentHash
    /// `"base":"…","v":"…","ops":[…]`: the event data's fields, without the braces (a multi-subscription stream
    /// puts its `"sub"` first).
    package var fields: [UInt8]
}

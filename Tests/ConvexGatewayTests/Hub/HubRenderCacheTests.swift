import Testing

@testable import ConvexGateway

/// What the hub keeps of a result's rendering, on its own.
@Suite struct HubRenderCacheTests {
    @Test func aBodyIsKeptPerOutputModeUntilTheNextResult() {
        var cache = HubState.RenderCache()
        #expect(cache.body(.plain) == nil)
        cache.keep([1], .plain)
        cache.keep([2], .encoded)
        #expect(cache.body(.plain) == [1] && cache.body(.encoded) == [2])
        cache.reset()
        #expect(cache.body(.plain) == nil && cache.body(.encoded) == nil)
    }

    @Test func eachOutputModeHasOneFrameUntilTheNextResult() {
        var cache = HubState.RenderCache()
        let frame = cache.frame(.plain)
        let again = cache.frame(.plain)
        let encoded = cache.frame(.encoded)
        #expect(again === frame, "every stream shares the one frame")
        #expect(encoded !== frame)
        cache.reset()
        let afterReset = cache.frame(.plain)
        #expect(afterReset !== frame, "a new result is framed anew")
    }
}

import ConvexSyncProtocol
import Testing

@testable import ConvexGateway

/// What one upstream transition makes, collected on its own: the order of its actions, and one delivery per stream.
@Suite struct HubTransitionBatchTests {
    static func result(_ n: Int, version: ResultVersion) -> HubState.NewResult {
        let key = SubscriptionHub.Key(
            identity: "", function: try! UdfPath(parsing: "messages:list"), args: ["n": .float64(Double(n))])
        let current = CurrentResult(
            id: "\(version.value)-\(n)", version: version, hash: ContentHash(value: UInt64(n)), result: .value(.null))
        return HubState.NewResult(key: key, current: current, previous: nil, renderings: ResultRenderings())
    }

    @Test func getsWakeFirstThenFanOutsThenOneDeliveryPerStream() {
        var batch = HubState.TransitionBatch(ts: 9)
        let stream = RecordingSink()
        let a = Self.result(1, version: 1)
        let b = Self.result(2, version: 1)
        var shared: [HubState.Delivery.MemberResult]?
        batch.deliver(
            .init(member: 1, result: b), to: stream, stream: ObjectIdentifier(stream), shared: &shared, expected: 1)
        shared = nil
        batch.deliver(
            .init(member: 0, result: a), to: stream, stream: ObjectIdentifier(stream), shared: &shared, expected: 1)
        batch.fanOut(a, to: [RecordingSink(), nil])
        batch.resume([], with: a.current)
        batch.resume([3], with: a.current)
        let actions = batch.actions()
        #expect(actions.count == 3, "an empty set of waiters wakes nobody")
        guard case .resume(let waiters, let with) = actions[0], case .fanOut(let fanOut) = actions[1],
            case .deliver(let deliveries) = actions[2]
        else {
            Issue.record("expected resume, fan-out, deliver: \(actions)")
            return
        }
        #expect(waiters == [3] && with?.ts == 9)
        #expect(fanOut.sinks.count == 2 && fanOut.delivery.changes.map(\.member) == [0])
        #expect(deliveries.count == 1, "one delivery for the stream, with both changes")
        #expect(deliveries[0].delivery.changes.map(\.member) == [0, 1], "in the order of the stream's members")
    }

    @Test func streamsThatGetTheSameFirstChangeShareItsList() {
        var batch = HubState.TransitionBatch(ts: 1)
        let result = Self.result(1, version: 1)
        var shared: [HubState.Delivery.MemberResult]?
        let streams = [RecordingSink(), RecordingSink(), RecordingSink()]
        for stream in streams {
            batch.deliver(
                .init(member: 0, result: result), to: stream, stream: ObjectIdentifier(stream), shared: &shared,
                expected: 3)
        }
        guard case .deliver(let deliveries) = batch.actions().first else {
            Issue.record("expected a delivery")
            return
        }
        #expect(deliveries.count == 3)
        let storage = deliveries.map { $0.delivery.changes.withUnsafeBufferPointer { $0.baseAddress } }
        #expect(Set(storage).count == 1, "one list, shared")
    }
}

extension HubState.TransitionBatch {
    /// The actions when no stream is held back (``HubState/ResumingStreams``).
    consuming func actions() -> [HubState.Action] {
        var none = HubState.ResumingStreams()
        return actions(holding: &none)
    }
}

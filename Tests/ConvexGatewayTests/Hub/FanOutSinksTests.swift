import Testing

@testable import ConvexGateway

@Suite struct FanOutSinksTests {
    func ids(_ sinks: [any EventSink]) -> [ObjectIdentifier] { sinks.map(ObjectIdentifier.init) }

    @Test func streamsStayInTheOrderTheyAttachedWhateverLeaves() {
        let streams = (0..<200).map { _ in RecordingSink() }
        var list = FanOutSinks()
        for stream in streams { list.append(stream) }
        list.append(streams[3])  // already in: stays where it is
        #expect(list.count == 200)
        #expect(ids(list.sinks) == ids(streams))

        // Every second stream leaves, then a few more: past half the slots the holes are squeezed out.
        var left: Set<ObjectIdentifier> = []
        for (index, stream) in streams.enumerated() where index % 2 == 0 || index % 7 == 0 {
            let removed = list.remove(ObjectIdentifier(stream))
            #expect(removed)
            left.insert(ObjectIdentifier(stream))
        }
        let removedAgain = list.remove(ObjectIdentifier(streams[0]))
        #expect(!removedAgain)
        let staying = streams.filter { !left.contains(ObjectIdentifier($0)) }
        #expect(list.count == staying.count)
        #expect(list.slots.count < streams.count)
        #expect(ids(list.sinks) == ids(staying))
        #expect(list.slots.compactMap { $0 }.count == staying.count)

        // Positions are right after the squeeze: a later leave takes out the stream it names, and a newcomer goes last.
        let removedLater = list.remove(ObjectIdentifier(staying[5]))
        #expect(removedLater)
        let newcomer = RecordingSink()
        list.append(newcomer)
        #expect(ids(list.sinks) == ids(staying.enumerated().filter { $0.offset != 5 }.map(\.element) + [newcomer]))
        #expect(list.contains(ObjectIdentifier(newcomer)) && !list.contains(ObjectIdentifier(staying[5])))
    }

    @Test func aListWhoseStreamsAllLeftHoldsNothing() {
        let streams = (0..<10).map { _ in RecordingSink() }
        var list = FanOutSinks()
        for stream in streams { list.append(stream) }
        for stream in streams.reversed() { list.remove(ObjectIdentifier(stream)) }
        #expect(list.isEmpty && list.slots.isEmpty)
        list.append(streams[4])
        #expect(ids(list.sinks) == [ObjectIdentifier(streams[4])])
    }
}

import ConvexSyncProtocol
import FuzzSupport

/// What must hold for sync-protocol frames: any text is either refused with a `SyncProtocolError` or read as a
/// message whose own JSON reads back as the same message. The first input byte picks the decoder: even, the client's
/// (server messages, as the Convex client reads them off its WebSocket); odd, the local deployment's (client
/// messages).
enum SyncMessageProperties {
    static func check(_ bytes: [UInt8]) {
        guard let selector = bytes.first else { return }
        let frame = bytes.dropFirst()
        if selector % 2 == 0 {
            guard let message = try? ServerMessage(json: frame) else { return }
            let written = message.json
            require(
                (try? ServerMessage(json: written)) == message,
                "server message \(excerpt(frame)) writes back as \(excerpt(written)), which reads differently")
        } else {
            guard let message = try? ClientMessage(json: frame) else { return }
            let written = message.json
            require(
                (try? ClientMessage(json: written)) == message,
                "client message \(excerpt(frame)) writes back as \(excerpt(written)), which reads differently")
        }
    }
}

/// One Server-Sent Event as a client sees it.
public struct ReceivedEvent: Sendable, Equatable {
    public var event: String?
    public var id: String?
    public var data: String
    /// Comment lines (heartbeats) that came before the event.
    public var comments: [String]
    /// The `retry:` field's milliseconds, if the block has one.
    public var retry: Int? = nil

    /// A block with no event (heartbeats, the preamble's `retry:` and comment, a farewell `retry:`).
    public var isComment: Bool { event == nil && id == nil && data.isEmpty && (retry != nil || !comments.isEmpty) }
}

/// Reads a chunked `text/event-stream` body from a `RawConnection` and splits it into events.
public final class EventStreamReader: @unchecked Sendable {
    public let connection: RawConnection
    public let head: ResponseHead
    private var text = ""
    private var ended = false

    /// Sends `GET target` and reads the response head.
    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public init(port: Int, target: String, headers: [String: String] = [:]) throws {
        connection = try RawConnection(port: port, receiveTimeoutSeconds: 30)
        var request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try connection.send(request + "\r\n")
        head = try connection.readHead()
    }

    /// The next event block, comments included; `nil` when the stream ended cleanly (terminating chunk).
    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public func next() throws -> ReceivedEvent? {
        while true {
            if let range = text.range(of: "\n\n") {
                let block = String(text[..<range.lowerBound])
                text.removeSubrange(..<range.upperBound)
                return Self.parse(block)
            }
            if ended { return nil }
            guard let chunk = try connection.readChunk() else {
                ended = true
                continue
            }
            text += String(decoding: chunk, as: UTF8.self)
        }
    }

    /// The next event that is not only a comment.
    @available(*, noasync, message: "a blocking socket call: run it inside `blocking { }`")
    public func nextEvent() throws -> ReceivedEvent? {
        while let event = try next() {
            if !event.isComment { return event }
        }
        return nil
    }

    public func close() { connection.close() }

    /// Ends the stream from another thread: a `nextEvent()` blocked on it returns (``RawConnection/shutdown()``).
    public func interrupt() { connection.shutdown() }

    public static func parse(_ block: String) -> ReceivedEvent {
        var event = ReceivedEvent(event: nil, id: nil, data: "", comments: [])
        var dataLines: [String] = []
        for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(":") {
                event.comments.append(String(line.dropFirst()).trimmingPrefixSpace())
                continue
            }
            let (field, value): (Substring, String) =
                if let colon = line.firstIndex(of: ":") {
                    (line[..<colon], String(line[line.index(after: colon)...]).trimmingPrefixSpace())
                } else {
                    (line, "")
                }
            switch field {
            case "event": event.event = value
            case "id": event.id = value
            case "data": dataLines.append(value)
            case "retry": event.retry = Int(value)
            default: break
            }
        }
        event.data = dataLines.joined(separator: "\n")
        return event
    }
}

extension String {
    fileprivate func trimmingPrefixSpace() -> String { hasPrefix(" ") ? String(dropFirst()) : self }
}

import Foundation
import HummingbirdWSClient
import Logging
import Synchronization
import TestSupport

/// The Chrome DevTools Protocol over one WebSocket: numbered commands answered by id, and events. Commands and
/// events may name a session (a page attached with `flatten: true`). Messages are JSON objects, handled with
/// `JSONSerialization` since their shapes vary by method.
final class DevToolsConnection: Sendable {
    /// An event as received: its method, session and parameters (JSON).
    struct Event: Sendable {
        var method: String
        var sessionID: String?
        var params: Data
    }

    private struct EventWaiter {
        var method: String
        var sessionID: String?
        var event: Event?
        var continuation: CheckedContinuation<Event, any Error>?
    }

    private struct State {
        var outbound: WebSocketOutboundWriter?
        var nextID = 0
        var pending: [Int: CheckedContinuation<Data, any Error>] = [:]
        var eventWaiters: [Int: EventWaiter] = [:]
        var closed: String?
    }

    private let state = Mutex(State())

    /// Connects to `url` (`ws://127.0.0.1:<port>/devtools/browser/<id>`), runs `body`, then closes the socket.
    static func withConnection<T: Sendable>(
        url: String, _ body: (DevToolsConnection) async throws -> T
    ) async throws -> T {
        let connection = DevToolsConnection()
        let logger = {
            var logger = Logger(label: "devtools")
            logger.logLevel = .critical
            return logger
        }()
        let opened = AsyncStream<Void>.makeStream()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer {
                    connection.end("the DevTools WebSocket closed")
                    opened.continuation.finish()
                }
                try await WebSocketClient.connect(
                    url: url, configuration: .init(maxFrameSize: 1 << 26), logger: logger
                ) { inbound, outbound, _ in
                    connection.state.withLock { $0.outbound = outbound }
                    opened.continuation.finish()
                    for try await message in inbound.messages(maxSize: 1 << 26) {
                        if case .text(let text) = message { connection.receive(text) }
                    }
                }
            }
            // Ends the wait when the socket opens or fails, or after 30 s (then `outbound` is still nil).
            try await withTimeout(
                .seconds(30), what: "the DevTools handshake", cancel: { _ in opened.continuation.finish() }
            ) {
                for await _ in opened.stream {}
            }
            if connection.state.withLock({ $0.outbound == nil }) {
                // The connection failed (its error ends the group) or took too long.
                group.cancelAll()
                try await group.waitForAll()
                throw TestFailure("could not connect to \(url) within 30 s")
            }
            do {
                let result = try await body(connection)
                await connection.close()
                try await group.waitForAll()
                return result
            } catch {
                await connection.close()
                group.cancelAll()
                throw error
            }
        }
    }

    /// Sends `method` with `params` (to `sessionID`'s page, if given) and returns the result object as JSON.
    /// - Throws: the protocol's error message, or ``TestFailure`` after `timeout`.
    @discardableResult
    func send(
        _ method: String, _ params: [String: Any] = [:], session sessionID: String? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> Data {
        var message: [String: Any] = ["method": method, "params": params]
        if let sessionID { message["sessionId"] = sessionID }
        let (id, outbound) = try state.withLock { state throws -> (Int, WebSocketOutboundWriter?) in
            if let closed = state.closed { throw TestFailure("\(method): \(closed)") }
            state.nextID += 1
            return (state.nextID, state.outbound)
        }
        message["id"] = id
        let text = String(decoding: try JSONSerialization.data(withJSONObject: message), as: UTF8.self)
        guard let outbound else { throw TestFailure("\(method): the DevTools WebSocket is not open") }
        return try await withTimeout(timeout, what: method, cancel: { self.resumeCommand(id, with: .failure($0)) }) {
            try await withCheckedThrowingContinuation { continuation in
                self.state.withLock { $0.pending[id] = continuation }
                Task {
                    do {
                        try await outbound.write(.text(text))
                    } catch {
                        self.resumeCommand(id, with: .failure(error))
                    }
                }
            }
        }
    }

    /// Starts watching for the next `method` event (of `sessionID`'s page, if given); call before the action that
    /// causes it, then ``wait(for:timeout:)`` on the returned token.
    func expectEvent(_ method: String, session sessionID: String? = nil) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.eventWaiters[state.nextID] = EventWaiter(method: method, sessionID: sessionID)
            return state.nextID
        }
    }

    /// Waits for the event an ``expectEvent(_:session:)`` token watches for.
    func wait(for token: Int, timeout: Duration = .seconds(30)) async throws -> Event {
        try await withTimeout(
            timeout, what: "a DevTools event", cancel: { self.resumeEvent(token, with: .failure($0)) }
        ) {
            try await withCheckedThrowingContinuation { continuation in
                let ready: Result<Event, any Error>? = state.withLock { state in
                    guard var waiter = state.eventWaiters[token] else {
                        return .failure(TestFailure("no such event expectation"))
                    }
                    if let event = waiter.event {
                        state.eventWaiters[token] = nil
                        return .success(event)
                    }
                    if let closed = state.closed { return .failure(TestFailure(closed)) }
                    waiter.continuation = continuation
                    state.eventWaiters[token] = waiter
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        }
    }

    private func receive(_ text: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return }
        if let id = object["id"] as? Int {
            if let error = object["error"] as? [String: Any] {
                let message = error["message"] as? String ?? "unknown error"
                let detail = error["data"] as? String
                resumeCommand(id, with: .failure(TestFailure(detail.map { "\(message): \($0)" } ?? message)))
            } else {
                let result = (try? JSONSerialization.data(withJSONObject: object["result"] ?? [:])) ?? Data("{}".utf8)
                resumeCommand(id, with: .success(result))
            }
            return
        }
        guard let method = object["method"] as? String else { return }
        let params = (try? JSONSerialization.data(withJSONObject: object["params"] ?? [:])) ?? Data("{}".utf8)
        let event = Event(method: method, sessionID: object["sessionId"] as? String, params: params)
        let waiting = state.withLock { state -> [CheckedContinuation<Event, any Error>] in
            var ready: [CheckedContinuation<Event, any Error>] = []
            for (token, var waiter) in state.eventWaiters
            where waiter.event == nil && waiter.method == method
                && (waiter.sessionID == nil || waiter.sessionID == event.sessionID)
            {
                if let continuation = waiter.continuation {
                    ready.append(continuation)
                    state.eventWaiters[token] = nil
                } else {
                    waiter.event = event
                    state.eventWaiters[token] = waiter
                }
            }
            return ready
        }
        for continuation in waiting { continuation.resume(returning: event) }
    }

    private func resumeCommand(_ id: Int, with result: Result<Data, any Error>) {
        state.withLock { $0.pending.removeValue(forKey: id) }?.resume(with: result)
    }

    private func resumeEvent(_ token: Int, with result: Result<Event, any Error>) {
        state.withLock { $0.eventWaiters.removeValue(forKey: token)?.continuation }?.resume(with: result)
    }

    /// Fails every command and event still waiting.
    private func end(_ reason: String) {
        let (commands, events) = state.withLock { state in
            state.closed = state.closed ?? reason
            defer {
                state.pending = [:]
                state.eventWaiters = state.eventWaiters.filter { $0.value.continuation == nil }
            }
            return (Array(state.pending.values), state.eventWaiters.values.compactMap(\.continuation))
        }
        for continuation in commands { continuation.resume(throwing: TestFailure(reason)) }
        for continuation in events { continuation.resume(throwing: TestFailure(reason)) }
    }

    private func close() async {
        let outbound = state.withLock { $0.outbound }
        try? await outbound?.close(.normalClosure, reason: nil)
        end("the DevTools WebSocket was closed")
    }
}

/// Runs `body`, which completes through a continuation; after `timeout`, `cancel` resumes it with a failure.
private func withTimeout<T: Sendable>(
    _ timeout: Duration, what: String, cancel: @escaping @Sendable (any Error) -> Void,
    _ body: () async throws -> T
) async throws -> T {
    let timer = Task {
        // Real time: a deadline on Chromium, an outside process with no clock the test could advance.
        try await Task.sleep(for: timeout)
        cancel(TestFailure("\(what) did not finish within \(timeout)"))
    }
    defer { timer.cancel() }
    return try await body()
}

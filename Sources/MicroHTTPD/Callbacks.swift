import CMicroHTTPD
import CMicroHTTPDShim
import Glibc

// C callbacks handed to libmicrohttpd. They run on libmicrohttpd's worker threads, recover their
// owner from the context pointer with `Unmanaged`, never block and never `await`.

let accessHandlerThunk: MHD_AccessHandlerCallback = {
    serverPointer, connection, url, method, version, uploadData, uploadDataSize, requestContext in
    guard let serverPointer, let connection, let uploadDataSize, let requestContext else { return MHD_Result.NO }
    let exchange: Exchange
    switch requestContext.pointee {
    case nil:
        cmhd_pending_head_remove(connection)
        let server = Unmanaged<HTTPServer>.fromOpaque(serverPointer).takeUnretainedValue()
        let handle = ConnectionHandle(raw: connection)
        // A connection the server has answered itself (its head came too late, or its address holds its share of
        // connections) is closed, however much of a request libmicrohttpd had read before the end of the stream.
        if let connectionGuard = server.connectionGuard, let context = handle.context,
            !connectionGuard.headersArrived(context)
        {
            return MHD_Result.NO
        }
        // Before anything reads the head's fields: a head with bytes libmicrohttpd's fields do not account for, or a
        // body length it would read another way than a proxy in front, is refused and its connection closed.
        let check = RequestHeadCheck.run(handle, method: method, version: version)
        if let refusal = check.rejection {
            let made = Exchange(server: server, connection: handle, target: handle.takePendingTarget())
            requestContext.pointee = Unmanaged.passRetained(made).toOpaque()
            return made.refuse(refusal)
        }
        if server.mayAnswerOnHotPath(declaresBody: check.framing.declaresLength || check.framing.isTransferEncoded) {
            requestContext.pointee = hotPathMarker
            return MHD_Result.YES
        }
        let made = Exchange(server: server, connection: handle, target: handle.takePendingTarget())
        requestContext.pointee = Unmanaged.passRetained(made).toOpaque()
        return made.firstCall(method: method)
    case hotPathMarker:
        let server = Unmanaged<HTTPServer>.fromOpaque(serverPointer).takeUnretainedValue()
        let handle = ConnectionHandle(raw: connection)
        let target = handle.takePendingTarget()
        let noBody = uploadDataSize.pointee == 0
        if noBody, let prepared = server.hotAnswer(handle, method: method, target: target) {
            return prepared.queue(on: handle)
        }
        // Full handling after all: a body arrived (chunked, no Content-Length), or the hot path declined.
        let made = Exchange(server: server, connection: handle, target: target, hotPathTried: noBody)
        requestContext.pointee = Unmanaged.passRetained(made).toOpaque()
        exchange = made
    case let existing?:
        exchange = Unmanaged<Exchange>.fromOpaque(existing).takeUnretainedValue()
    }
    if uploadDataSize.pointee > 0 {
        exchange.receiveBody(UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee))
        uploadDataSize.pointee = 0
        return MHD_Result.YES
    }
    return exchange.finalCall(url: url, method: method, version: version)
}

/// The per-request context of a request the hot path may answer, in place of an ``Exchange``: none is made
/// unless the request needs one (see ``HTTPServer/mayAnswerOnHotPath(declaresBody:)``). A fixed non-null address,
/// never read.
nonisolated(unsafe) let hotPathMarker = UnsafeMutableRawPointer(bitPattern: 1)

let requestCompletedThunk: MHD_RequestCompletedCallback = { _, _, requestContext, code in
    guard let requestContext, let pointer = requestContext.pointee else { return }
    requestContext.pointee = nil
    if pointer == hotPathMarker { return }
    Unmanaged<Exchange>.fromOpaque(pointer).takeRetainedValue().completed(code)
}

let connectionNotifyThunk: MHD_NotifyConnectionCallback = { serverPointer, connection, socketContext, code in
    guard let serverPointer, let socketContext else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(serverPointer).takeUnretainedValue()
    switch code {
    case MHD_ConnectionNotificationCode.CONNECTION_NOTIFY_STARTED:
        // The accept watchdog's own wake-up connection is neither a client waiting for its request nor one of the
        // connections the limit counts.
        let watchdog = server.acceptWatchdog
        let isWatchdogPoke =
            connection.map { watchdog.claimPoke(clientPort: cmhd_connection_client_port($0)) } ?? false
        // A client's connection is guarded: it may be refused here, answered at once (over its address's share).
        let context =
            if !isWatchdogPoke, let connection, let connectionGuard = server.connectionGuard {
                connectionGuard.accepted(connection)
            } else {
                ConnectionContext()
            }
        context.isWatchdogPoke = isWatchdogPoke
        if context.isWatchdogPoke {
            watchdog.pokesAccepted.add(1, ordering: .relaxed)
        } else {
            context.acceptedTick = watchdog.accepted()
            server.connectionCount.add(1, ordering: .relaxed)
        }
        socketContext.pointee = Unmanaged.passRetained(context).toOpaque()
    case MHD_ConnectionNotificationCode.CONNECTION_NOTIFY_CLOSED:
        if let connection { cmhd_pending_head_remove(connection) }
        guard let pointer = socketContext.pointee else { return }
        let context = Unmanaged<ConnectionContext>.fromOpaque(pointer).takeRetainedValue()
        socketContext.pointee = nil
        server.connectionGuard?.closed(context)
        if let tick = context.acceptedTick { server.acceptWatchdog.requestArrived(acceptedAt: tick) }
        if !context.isWatchdogPoke { server.connectionCount.subtract(1, ordering: .relaxed) }
    default:
        break
    }
}

typealias URILogCallback =
    @convention(c) (
        UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?
    ) -> UnsafeMutableRawPointer?

/// Records the raw request-target (before libmicrohttpd percent-decodes the path) in the
/// connection's context; returns NULL so the first access-handler call still sees `*con_cls == NULL`.
///
/// Then it ends the query for libmicrohttpd right after its `?`, so libmicrohttpd stores no query parameters (the
/// server reads them from the raw target: ``HTTPQueryItem/items(inRawQuery:)``). libmicrohttpd 0.9.75 parses them
/// next, into the connection's memory pool; when a long request line has left no room there, it queues its 431 and
/// then overwrites that state and waits for header lines it has already discarded, so the client would get no answer
/// until the idle timeout. The `uri` libmicrohttpd passes is the request line in its read buffer, which it cuts
/// itself at the `?` right after this call.
let uriLogThunk: URILogCallback = { serverPointer, uri, connection in
    guard let uri, let connection else { return nil }
    let context = ConnectionHandle(raw: connection).context
    context?.noteTarget(uri)
    // Its head is being read: should libmicrohttpd refuse its fields itself, the server answers in its place
    // (``HTTPServer/libraryLogged(_:)``).
    cmhd_pending_head_add(connection)
    if let serverPointer, let tick = context?.acceptedTick {
        // The connection's first request line: libmicrohttpd reads this connection.
        context?.acceptedTick = nil
        Unmanaged<HTTPServer>.fromOpaque(serverPointer).takeUnretainedValue().acceptWatchdog.requestArrived(
            acceptedAt: tick)
    }
    if let question = strchr(uri, Int32(UInt8(ascii: "?"))) {
        UnsafeMutablePointer(mutating: question + 1).pointee = 0
    }
    return nil
}

let streamReaderThunk: MHD_ContentReaderCallback = { writerPointer, _, buffer, max in
    guard let writerPointer, let buffer else { return Int(MHD_CONTENT_READER_END_WITH_ERROR) }
    let writer = Unmanaged<HTTPStreamWriter>.fromOpaque(writerPointer).takeUnretainedValue()
    return writer.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max))
}

let streamReaderFreeThunk: MHD_ContentReaderFreeCallback = { writerPointer in
    guard let writerPointer else { return }
    Unmanaged<HTTPStreamWriter>.fromOpaque(writerPointer).release()
}

let headerIteratorThunk: MHD_KeyValueIteratorN = { fieldsPointer, _, key, keySize, value, valueSize in
    guard let fieldsPointer else { return MHD_Result.NO }
    let fields = fieldsPointer.assumingMemoryBound(to: [HTTPHeaders.Field].self)
    fields.pointee.append(
        HTTPHeaders.Field(name: decodeText(key, keySize) ?? "", value: decodeText(value, valueSize) ?? "")
    )
    return MHD_Result.YES
}

/// Hands each header field to the ``RequestHeadCheck`` the context points at.
let headCheckThunk: MHD_KeyValueIteratorN = { checkPointer, _, key, keySize, value, valueSize in
    guard let checkPointer else { return MHD_Result.NO }
    checkPointer.assumingMemoryBound(to: RequestHeadCheck.self).pointee.field(
        name: UnsafeRawBufferPointer(start: key, count: keySize),
        value: UnsafeRawBufferPointer(start: value, count: valueSize))
    return MHD_Result.YES
}

let logThunk: cmhd_log_function = { serverPointer, message in
    guard let serverPointer, let message else { return }
    Unmanaged<HTTPServer>.fromOpaque(serverPointer).takeUnretainedValue().libraryLogged(String(cString: message))
}

private func decodeText(_ pointer: UnsafePointer<CChar>?, _ count: Int) -> String? {
    guard let pointer else { return nil }
    return String(decoding: UnsafeRawBufferPointer(start: pointer, count: count), as: UTF8.self)
}

import Foundation
import Logging
import MicroHTTPD
import Synchronization
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A server configuration for tests: loopback, ephemeral port, two workers.
func testConfiguration(_ adjust: (inout HTTPServerConfiguration) -> Void = { _ in }) -> HTTPServerConfiguration {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
    configuration.threadPoolSize = 2
    configuration.shutdownGracePeriod = .seconds(3)
    adjust(&configuration)
    return configuration
}

/// A handler that answers `status` with `body` synchronously.
func staticHandler(_ body: String, status: Int = 200) -> HTTPHandler {
    { _, responder in responder.respond(HTTPResponse(status: status, body: body)) }
}

let quietLogger: Logger = {
    var logger = Logger(label: "MicroHTTPDTests")
    logger.logLevel = .critical
    return logger
}()

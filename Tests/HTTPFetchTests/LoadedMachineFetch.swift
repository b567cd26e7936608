import HTTPFetch
import NIOHTTP1
import NIOSSL

/// `httpFetch` with the time limit sized for the whole suite running in parallel on a loaded machine, where a loopback
/// exchange can wait seconds for a thread: 60 s instead of the 10 s default. Tests of the limit itself pass their own.
func fetch(
    _ method: HTTPMethod = .GET, _ url: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
    timeout: Duration = .seconds(60), maxBodyBytes: Int = 8 << 20, tls: TLSConfiguration? = nil
) async throws(HTTPFetchError) -> HTTPFetchResponse {
    try await httpFetch(
        method, url, headers: headers, body: body, timeout: timeout, maxBodyBytes: maxBodyBytes, tls: tls)
}

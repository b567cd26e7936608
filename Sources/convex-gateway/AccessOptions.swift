import ArgumentParser
import ConvexGateway
import Foundation

/// Command-line options of the access controls and request limits; each also reads the environment variable named
/// in its help (flag > environment > default).
struct AccessOptions: ParsableArguments {
    @Option(
        help:
            "File holding the gateway API key required in X-API-Key. Env GATEWAY_API_KEY_FILE, or the key itself in GATEWAY_API_KEY. Default: no key."
    )
    var apiKeyFile: String?

    @Option(
        help:
            "Comma-separated function globs callers may reach (e.g. 'messages:*,admin/**'). Env GATEWAY_ALLOW_FUNCTIONS. Default: all."
    )
    var allowFunctions: String?

    @Option(
        help:
            "Comma-separated function globs refused as if unknown; wins over the allowlist. Env GATEWAY_DENY_FUNCTIONS. Default: none."
    )
    var denyFunctions: String?

    @Option(help: "Comma-separated allowed CORS origins, or '*'. Env GATEWAY_CORS_ORIGINS. Default: CORS off.")
    var corsOrigins: String?

    @Option(help: "Allow credentialed CORS requests (true/false). Env GATEWAY_CORS_ALLOW_CREDENTIALS. Default false.")
    var corsAllowCredentials: Bool?

    @Option(help: "Seconds a browser may cache a CORS preflight. Env GATEWAY_CORS_MAX_AGE_SECONDS. Default 600.")
    var corsMaxAgeSeconds: Int?

    @Option(
        help:
            "Comma-separated response headers exposed to CORS pages. Env GATEWAY_CORS_EXPOSE_HEADERS. Default 'ETag, Retry-After'."
    )
    var corsExposeHeaders: String?

    @Option(help: "Requests per second per client IP on function routes (0: off). Env GATEWAY_RATE_LIMIT. Default 0.")
    var rateLimit: Double?

    @Option(
        help: "Requests a quiet client may send at once (0: twice the rate). Env GATEWAY_RATE_LIMIT_BURST. Default 0.")
    var rateLimitBurst: Int?

    @Option(
        help:
            "Per-connection memory pool in bytes; the request line and headers must fit (else 414/431). Env GATEWAY_CONNECTION_MEMORY_BYTES. Default 12288."
    )
    var connectionMemoryBytes: Int?

    @Option(
        help:
            "Seconds of silence before a connection is closed (slow senders; 0: never). Env GATEWAY_IDLE_TIMEOUT_SECONDS. Default 30."
    )
    var idleTimeoutSeconds: Int?

    /// Resolves the options (flag > environment > default) into `access`, checking every value.
    /// - Throws: `ValidationError` naming the setting (never a secret's value).
    func apply(to access: inout AccessConfiguration, environment: [String: String]) throws {
        let source = SettingSource(environment: environment)

        do throws(SecretError) {
            // A file given by flag wins over a key in the environment.
            let file = source.value(apiKeyFile, "GATEWAY_API_KEY_FILE")
            let direct = apiKeyFile == nil ? source.value(nil, "GATEWAY_API_KEY") : nil
            access.apiKey = try Secret.load(
                value: direct, valueName: "GATEWAY_API_KEY", file: file, fileName: "--api-key-file/GATEWAY_API_KEY_FILE"
            )
        } catch {
            throw ValidationError(error.message)
        }
        do throws(FunctionPatternError) {
            if let text = source.value(allowFunctions, "GATEWAY_ALLOW_FUNCTIONS") {
                access.functions.allow = try FunctionPattern.list(text)
            }
            if let text = source.value(denyFunctions, "GATEWAY_DENY_FUNCTIONS") {
                access.functions.deny = try FunctionPattern.list(text)
            }
        } catch {
            throw ValidationError("GATEWAY_ALLOW_FUNCTIONS/GATEWAY_DENY_FUNCTIONS: \(error.message)")
        }
        var cors = access.cors
        if let text = source.value(corsOrigins, "GATEWAY_CORS_ORIGINS") {
            do throws(CORSOriginError) {
                cors.origins = try CORSPolicy.origins(text)
            } catch {
                throw ValidationError("GATEWAY_CORS_ORIGINS: \(error.message)")
            }
        }
        if let text = source.value(corsAllowCredentials.map { String($0) }, "GATEWAY_CORS_ALLOW_CREDENTIALS") {
            guard let flag = Bool(text.lowercased()) else {
                throw ValidationError("GATEWAY_CORS_ALLOW_CREDENTIALS must be true or false, not '\(text)'")
            }
            cors.allowCredentials = flag
        }
        if let n = try source.int(corsMaxAgeSeconds, "GATEWAY_CORS_MAX_AGE_SECONDS", range: 0...86_400) {
            cors.maxAgeSeconds = n
        }
        if let text = source.value(corsExposeHeaders, "GATEWAY_CORS_EXPOSE_HEADERS") {
            let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
            guard names.allSatisfy({ $0.utf8.allSatisfy { b in b > 0x20 && b < 0x7F && b != UInt8(ascii: ":") } })
            else {
                throw ValidationError("GATEWAY_CORS_EXPOSE_HEADERS must be a comma-separated list of header names")
            }
            cors.exposedHeaders = names
        }
        access.cors = cors
        if let text = source.value(rateLimit.map { String($0) }, "GATEWAY_RATE_LIMIT") {
            guard let rate = Double(text), rate >= 0, rate <= 1_000_000 else {
                throw ValidationError(
                    "GATEWAY_RATE_LIMIT must be requests per second from 0 (off) to 1000000, not '\(text)'")
            }
            access.rateLimit = rate
        }
        if let n = try source.int(rateLimitBurst, "GATEWAY_RATE_LIMIT_BURST", range: 0...1_000_000) {
            access.rateLimitBurst = n
        }
        if let n = try source.int(connectionMemoryBytes, "GATEWAY_CONNECTION_MEMORY_BYTES", range: 4096...(16 << 20)) {
            access.connectionMemoryLimit = n
        }
        if let n = try source.int(idleTimeoutSeconds, "GATEWAY_IDLE_TIMEOUT_SECONDS", range: 0...86_400) {
            access.idleTimeoutSeconds = n
        }
    }
}

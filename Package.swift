// swift-tools-version:6.1
import PackageDescription

/// The commit `convex-gateway --version` and its `convex_gateway_build_info` metric name (docs/configuration.md): the
/// environment variable CONVEX_GATEWAY_COMMIT when the package is built (docker/Dockerfile passes `git rev-parse HEAD`),
/// if it is a hexadecimal commit name; else the build says "unknown". Not `Context.gitInformation`, which SwiftPM caches
/// with the evaluated manifest, so that an incremental build would go on naming an old commit.
let buildCommit =
    Context.environment["CONVEX_GATEWAY_COMMIT"].flatMap { commit in
        (7...64).contains(commit.count) && commit.allSatisfy(\.isHexDigit) ? commit.lowercased() : nil
    } ?? "unknown"

let package = Package(
    name: "ConvexGateway",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ConvexValues", targets: ["ConvexValues"]),
        .library(name: "ConvexSyncProtocol", targets: ["ConvexSyncProtocol"]),
        .library(name: "Convex", targets: ["Convex"]),
        .library(name: "ConvexLocal", targets: ["ConvexLocal"]),
        .library(name: "MicroHTTPD", targets: ["MicroHTTPD"]),
        .library(name: "ConvexGateway", targets: ["ConvexGateway"]),
        .executable(name: "convex-gateway", targets: ["convex-gateway"]),
        .executable(name: "convex-local", targets: ["convex-local"]),
    ],
    dependencies: [
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/vapor/websocket-kit.git", from: "2.16.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/pointfreeco/swift-clocks.git", from: "1.1.1"),
        // No traits: swift-configuration reads the flags, the environment and the settings file's values; the file
        // itself is read by ConvexGateway/Settings/SettingsFile.swift (Foundation's JSON, Yams), which refuses unknown
        // keys, where the file providers would ignore them.
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: []),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.1.0"),
        // gzip for response bodies, over the system zlib (Debian's zlib1g-dev).
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        // YAML for `--config <file>.yaml` (ConvexGateway/Settings/SettingsFile.swift).
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
    ],
    targets: [
        // MARK: Values
        .target(name: "ConvexValues"),
        .testTarget(
            name: "ConvexValuesTests",
            dependencies: [
                "ConvexValues",
                "TestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            exclude: ["Python"]
        ),

        // MARK: Time
        // The one injected notion of time (`ElapsedClock`): elapsed time, sleeps and the wall clock, for the client,
        // the embedded deployment and the gateway alike; a test clock moves all of them at once.
        .target(name: "TimeSource"),
        .testTarget(
            name: "TimeSourceTests",
            dependencies: ["TimeSource", .product(name: "Clocks", package: "swift-clocks")]
        ),

        // MARK: Sync protocol and client
        .target(name: "ConvexSyncProtocol", dependencies: ["ConvexValues"]),
        // The byte-level rules of the header fields the gateway reads on its hot path (entity tags, Accept,
        // Accept-Encoding, comparisons in place) and the client-address key (docs/architecture.md says where the
        // other unsafe code is).
        .target(name: "HTTPFields", dependencies: ["MicroHTTPD"]),
        .testTarget(name: "ConvexSyncProtocolTests", dependencies: ["ConvexSyncProtocol", "ConvexValues"]),
        // One HTTP/1.1 request over SwiftNIO: the few plain fetches, without FoundationNetworking (libcurl).
        .target(
            name: "HTTPFetch",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "HTTPFetchTests",
            dependencies: [
                "HTTPFetch",
                "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "Convex",
            dependencies: [
                "TimeSource",
                "ConvexValues",
                "ConvexSyncProtocol",
                "HTTPFetch",
                .product(name: "WebSocketKit", package: "websocket-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ConvexTests",
            dependencies: [
                "Convex",
                "TestSupport",
                .product(name: "Clocks", package: "swift-clocks"),
                "ConvexLocal",
                "ConvexSyncProtocol",
                "ConvexValues",
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Embedded local deployment
        .target(
            name: "ConvexLocal",
            dependencies: [
                "TimeSource",
                "ConvexValues",
                "ConvexSyncProtocol",
                "HTTPFetch",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "convex-local",
            dependencies: [
                "ConvexLocal",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "local-deployment-bench",
            dependencies: [
                "ConvexLocal",
                "ConvexSyncProtocol",
                "ConvexValues",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/local-deployment"
        ),
        .testTarget(
            name: "ConvexLocalTests",
            dependencies: [
                "ConvexLocal",
                "TimeSource",
                .product(name: "Clocks", package: "swift-clocks"),
                "ConvexValues",
                "ConvexSyncProtocol",
                "TestSupport",
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            exclude: ["python"]
        ),

        // MARK: HTTP server
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .target(name: "CMicroHTTPDShim", dependencies: ["CMicroHTTPD"]),
        // The one home of blocking calls (a thread of their own, never the concurrency pool) and of child processes.
        // posix_spawn with the GNU extensions (closefrom, chdir) that ChildProcess starts children with.
        .target(name: "CSpawn"),
        .target(name: "OffThePool", dependencies: ["CSpawn"]),
        .testTarget(name: "OffThePoolTests", dependencies: ["OffThePool"]),
        .target(
            name: "MicroHTTPD",
            dependencies: [
                "CMicroHTTPD",
                "CMicroHTTPDShim",
                "OffThePool",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "MicroHTTPDTests", dependencies: ["MicroHTTPD", "TestSupport"]),
        .target(
            name: "TestSupport",
            dependencies: ["OffThePool", .product(name: "Clocks", package: "swift-clocks")],
            path: "Tests/TestSupport"),

        // MARK: Gateway
        .target(
            name: "ConvexGateway",
            dependencies: [
                "ConvexValues",
                "ConvexSyncProtocol",
                "Convex",
                "MicroHTTPD",
                "HTTPFields",
                // The OTLP span exporter's posts (ConvexGateway/Tracing/).
                "HTTPFetch",
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ],
            // Embedded in the binary (ClientScript.swift): no resource bundle to install beside the executable. The
            // modules of client.js, served as one file in this order.
            resources: [
                .embedInCode("Resources/client/errors.js"), .embedInCode("Resources/client/event-stream.js"),
                .embedInCode("Resources/client/authentication.js"), .embedInCode("Resources/client/values.js"),
                .embedInCode("Resources/client/patching.js"), .embedInCode("Resources/client/callbacks.js"),
                .embedInCode("Resources/client/paginated-pages.js"),
                .embedInCode("Resources/client/paginated-state.js"),
                .embedInCode("Resources/client/paginated-query.js"), .embedInCode("Resources/client/optimistic.js"),
                .embedInCode("Resources/client/backoff.js"), .embedInCode("Resources/client/calls.js"),
                .embedInCode("Resources/client/request-queue.js"), .embedInCode("Resources/client/live-queries.js"),
                .embedInCode("Resources/client/connection.js"), .embedInCode("Resources/client/gateway.js"),
                // The demo page served at `/` on the embedded deployment.
                .embedInCode("Resources/demo/index.html"),
                // The gateway's OpenAPI document (a link to openapi/openapi.yaml), served at /openapi.yaml by
                // convex-gateway when no --openapi-file is given.
                .embedInCode("Resources/openapi/openapi.yaml"),
            ]
        ),
        // The build's commit as a C string (Sources/CBuildInfo): a C define carries a value, a Swift one does not.
        .target(name: "CBuildInfo", cSettings: [.define("CONVEX_GATEWAY_COMMIT", to: "\"\(buildCommit)\"")]),
        .executableTarget(
            name: "convex-gateway",
            dependencies: [
                "CBuildInfo",
                "ConvexGateway",
                "Convex",
                "ConvexLocal",
                "ConvexValues",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "ConvexGatewayTests",
            dependencies: [
                "ConvexGateway",
                "HTTPFields",
                "ConvexSyncProtocol",
                "TestSupport",
                "Convex",
                "ConvexLocal",
                "ConvexValues",
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Configuration", package: "swift-configuration"),
                // The browser tests speak the DevTools protocol to headless Chromium over a WebSocket.
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // MARK: Fuzzing (docs/testing.md, "Fuzzing"): one libFuzzer target per parser that meets untrusted bytes. Built
        // by scripts/fuzz with libFuzzer and AddressSanitizer and FUZZING defined; a plain build makes each a replay
        // runner of its corpus (Fuzz/Corpus/<target>), which scripts/test runs.
        .target(name: "CFuzzerDriver", path: "Fuzz/CFuzzerDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzerDriver"], path: "Fuzz/FuzzSupport"),
        .executableTarget(
            name: "fuzz-convex-json", dependencies: ["FuzzSupport", "ConvexValues"], path: "Fuzz/convex-json"),
        .executableTarget(
            name: "fuzz-request",
            dependencies: [
                "FuzzSupport", "ConvexGateway", "ConvexLocal", "ConvexSyncProtocol", "ConvexValues", "HTTPFields",
            ],
            path: "Fuzz/request"),
        .executableTarget(
            name: "fuzz-credentials", dependencies: ["FuzzSupport", "ConvexGateway", "ConvexValues"],
            path: "Fuzz/credentials"),
        .executableTarget(
            name: "fuzz-json-patch", dependencies: ["FuzzSupport", "ConvexGateway", "ConvexValues"],
            path: "Fuzz/json-patch"),
        .executableTarget(
            name: "fuzz-sync-messages", dependencies: ["FuzzSupport", "ConvexSyncProtocol"],
            path: "Fuzz/sync-messages"),
        .executableTarget(
            name: "fuzz-http",
            dependencies: [
                "FuzzSupport", "Convex", "ConvexGateway", "ConvexLocal", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Fuzz/http"),

        // MARK: Benchmarks
        .executableTarget(
            name: "convex-client-bench",
            dependencies: [
                "Convex",
                "ConvexValues",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/ConvexClientBench"
        ),
        .executableTarget(
            name: "convex-values-bench",
            dependencies: ["ConvexValues", "TestSupport"],
            path: "Benchmarks/ConvexValuesBench"
        ),
        .executableTarget(
            name: "mhd-hello",
            dependencies: ["MicroHTTPD"],
            path: "Benchmarks/mhd-hello/Swift"
        ),
    ]
)

// MARK: Sanitized builds
// scripts/sanitize and scripts/fuzz set CONVEX_SANITIZE: `thread` (ThreadSanitizer), `address` (AddressSanitizer, with
// UndefinedBehaviorSanitizer on the C targets) or `fuzzer` (libFuzzer with AddressSanitizer, FUZZING defined). This
// package's own targets are then built with it, in the plain build's folder; the dependencies are not instrumented and
// keep the plain debug build's objects, so a sanitized build compiles this package alone again, not every dependency
// (docs/testing.md, "Sanitizers"). A plain `swift build` after one compiles this package again, plain.
if let sanitizer = Context.environment["CONVEX_SANITIZE"] {
    // (Swift's flags, C's, and the flags of what is linked.)
    let flags: (swift: [String], c: [String], link: [String])
    switch sanitizer {
    case "thread": flags = (["-sanitize=thread"], ["-fsanitize=thread"], ["-sanitize=thread"])
    case "address":
        flags = (["-sanitize=address"], ["-fsanitize=address", "-fsanitize=undefined"], ["-sanitize=address"])
    // Coverage counters and AddressSanitizer on every target; libFuzzer is linked into the fuzz targets only (their
    // entry point starts its driver: Fuzz/FuzzSupport/FuzzDriver.swift).
    case "fuzzer": flags = (["-sanitize=fuzzer,address"], ["-fsanitize=fuzzer-no-link,address"], ["-sanitize=address"])
    default: fatalError("CONVEX_SANITIZE is thread, address or fuzzer, not \(sanitizer)")
    }
    for target in package.targets where target.type != .system {
        // FUZZING for the fuzz targets' entry point; THREAD_SANITIZER for the edges MicroHTTPD's Exchange tells
        // ThreadSanitizer about (Sources/MicroHTTPD/Exchange.swift, `withMachine`).
        let defines: [SwiftSetting] =
            switch sanitizer {
            case "fuzzer": [.define("FUZZING")]
            case "thread": [.define("THREAD_SANITIZER")]
            default: []
            }
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(flags.swift)] + defines
        target.cSettings = (target.cSettings ?? []) + [.unsafeFlags(flags.c)]
        // On what is linked only: swiftc keeps the last of several `-sanitize=` flags, so a library's would compete.
        guard target.type == .executable || target.type == .test else { continue }
        let link = sanitizer == "fuzzer" && target.name.hasPrefix("fuzz-") ? ["-sanitize=fuzzer,address"] : flags.link
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(link)]
    }
}

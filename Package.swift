// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "ConvexGateway",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ConvexValues", targets: ["ConvexValues"]),
        .library(name: "MicroHTTPD", targets: ["MicroHTTPD"]),
        .library(name: "ConvexGateway", targets: ["ConvexGateway"]),
    ],
    dependencies: [
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        .target(name: "ConvexValues"),
        .target(
            name: "ConvexGateway",
            dependencies: [
                "ConvexValues",
                "MicroHTTPD",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "ConvexGatewayTests", dependencies: ["ConvexGateway"]),
        .testTarget(
            name: "ConvexValuesTests",
            dependencies: [
                "ConvexValues",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .target(name: "CMicroHTTPDShim", dependencies: ["CMicroHTTPD"]),
        .target(
            name: "MicroHTTPD",
            dependencies: [
                "CMicroHTTPD",
                "CMicroHTTPDShim",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "MicroHTTPDTests", dependencies: ["MicroHTTPD"]),
        .executableTarget(
            name: "mhd-hello",
            dependencies: ["MicroHTTPD"],
            path: "Benchmarks/mhd-hello/Swift"
        ),
    ]
)

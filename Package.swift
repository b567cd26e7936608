// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "ConvexGateway",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ConvexValues", targets: ["ConvexValues"]),
        .library(name: "ConvexSyncProtocol", targets: ["ConvexSyncProtocol"]),
        .library(name: "Convex", targets: ["Convex"]),
    ],
    dependencies: [
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        .target(name: "ConvexValues"),
        .target(name: "ConvexSyncProtocol", dependencies: ["ConvexValues"]),
        .target(
            name: "Convex",
            dependencies: [
                "ConvexValues",
                "ConvexSyncProtocol",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "ConvexSyncProtocolTests", dependencies: ["ConvexSyncProtocol", "ConvexValues"]),
        .testTarget(
            name: "ConvexValuesTests",
            dependencies: [
                "ConvexValues",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "ConvexTests",
            dependencies: [
                "Convex",
                "ConvexSyncProtocol",
                "ConvexValues",
            ]
        ),
    ]
)

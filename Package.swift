// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "ConvexGateway",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ConvexValues", targets: ["ConvexValues"]),
        .library(name: "ConvexGateway", targets: ["ConvexGateway"]),
    ],
    dependencies: [
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        .target(name: "ConvexValues"),
        .target(name: "ConvexGateway", dependencies: ["ConvexValues"]),
        .testTarget(name: "ConvexGatewayTests", dependencies: ["ConvexGateway"]),
        .testTarget(
            name: "ConvexValuesTests",
            dependencies: [
                "ConvexValues",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
    ]
)

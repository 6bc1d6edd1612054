// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "Haul",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "Haul", targets: ["Haul"]),
    .executable(name: "haul", targets: ["HaulCLI"]),
  ],
  targets: [
    // libcurl's stable ABI subset, declared here so that no curl headers are needed to build.
    .target(
      name: "CCurl",
      linkerSettings: [
        .linkedLibrary(":libcurl.so.4", .when(platforms: [.linux])),
        .linkedLibrary("curl", .when(platforms: [.macOS])),
      ]
    ),
    // OpenSSL libcrypto's EVP digests (headers ship with libssl-dev).
    .target(
      name: "CCrypto",
      linkerSettings: [.linkedLibrary("crypto")]
    ),
    // File-system calls Swift's Glibc module lacks: extended attributes, direct I/O.
    .target(name: "CFileSystem"),
    .target(name: "Haul", dependencies: ["CCurl", "CCrypto", "CFileSystem"]),
    .executableTarget(name: "HaulCLI", dependencies: ["Haul"]),
    // A loopback HTTP/1.1 server with fault switches, shared by the test targets.
    .target(name: "HaulTestSupport", path: "Tests/HaulTestSupport"),
    .testTarget(name: "HaulTests", dependencies: ["Haul", "HaulTestSupport"]),
    .testTarget(name: "HaulCLITests", dependencies: ["HaulCLI", "Haul", "HaulTestSupport"]),
  ],
  swiftLanguageModes: [.v6]
)

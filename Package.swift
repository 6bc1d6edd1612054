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
    // libevent 2.1's loop, evhttp and bufferevents for `haul daemon`, declared here (no headers needed).
    .target(
      name: "CEvent",
      linkerSettings: [
        .linkedLibrary(":libevent-2.1.so.7", .when(platforms: [.linux])),
        .linkedLibrary("event", .when(platforms: [.macOS])),
      ]
    ),
    // libpq, opened at run time (dlopen) so that haul builds and runs without it; only --queue needs it.
    .target(name: "CPostgres", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
    // The system SQLite (sqlite3.h is on every target machine) for the manager's catalog.
    .target(
      name: "CSQLite",
      linkerSettings: [
        .linkedLibrary(":libsqlite3.so.0", .when(platforms: [.linux])),
        .linkedLibrary("sqlite3", .when(platforms: [.macOS])),
      ]
    ),
    // The pure parts: parsers, the resume decision, planner, controller, retry policy, the
    // public value types. Links no C library, so unit tests and fuzzers use it directly.
    .target(name: "HaulCore"),
    .target(
      name: "Haul", dependencies: ["HaulCore", "CCurl", "CCrypto", "CFileSystem", "CPostgres", "CSQLite"],
      exclude: ["Engine/README.md"]),
    .executableTarget(name: "HaulCLI", dependencies: ["Haul", "HaulRPC", "HaulDaemon"]),
    // The daemon's pure parts: JSON, JSON-RPC 2.0, WebSocket framing, Host/CORS policy (no C library).
    .target(name: "HaulRPC"),
    // `haul daemon`: aria2's JSON-RPC over HTTP and WebSocket on evhttp, driving the manager.
    .target(name: "HaulDaemon", dependencies: ["Haul", "HaulRPC", "CEvent", "CCrypto"]),
    // Test processes only: posix_spawn with every other descriptor closed (Subprocess), pipe2.
    .target(name: "CTestSupport", path: "Tests/CTestSupport"),
    // A loopback HTTP/1.1 server with fault switches, shared by the test targets.
    .target(name: "HaulTestSupport", dependencies: ["CTestSupport"], path: "Tests/HaulTestSupport"),
    // A PostgreSQL server of a test's own (initdb + postgres on a loopback port), for the fleet queue.
    .target(name: "FleetTestSupport", dependencies: ["HaulTestSupport"], path: "Tests/FleetTestSupport"),
    // The fleet queue's measurements (claim and progress rates, three workers against one): printed, never asserted.
    .executableTarget(
      name: "FleetBench", dependencies: ["Haul", "HaulTestSupport", "FleetTestSupport"],
      path: "Tests/HaulTests/Fleet/Bench"),
    .testTarget(name: "HaulCoreTests", dependencies: ["HaulCore", "HaulTestSupport"]),
    // The manager's crash-trial child and its measurements (`HaulManagerHarness bench`).
    .executableTarget(
      name: "HaulManagerHarness", dependencies: ["Haul"], path: "Tests/HaulTests/Manager/Harness"),
    .testTarget(
      name: "HaulTests",
      dependencies: ["Haul", "HaulTestSupport", "FleetTestSupport", "HaulManagerHarness", "FleetBench"],
      exclude: ["Manager/Harness", "Fleet/Bench"]),
    .testTarget(
      name: "HaulCLITests",
      dependencies: ["HaulCLI", "Haul", "HaulTestSupport", "FleetTestSupport", "HaulDaemon", "HaulRPC"]),
    .testTarget(name: "HaulDaemonTests", dependencies: ["HaulDaemon", "HaulRPC", "CEvent", "HaulTestSupport"]),
  ],
  swiftLanguageModes: [.v6]
)

// swift-tools-version:6.0
import PackageDescription

// Layering (arrows point at dependencies):
//   hearthd ─► HearthServer ─► HearthLoop ─► CLibUV          (only HearthLoop imports libuv)
//                                 HearthLoop ─► HearthCrypto  (TLS streams: memory-BIO sessions driven by libuv)
//                  ├──────────► HearthProtocol ─► HearthModel, CSimdJSON
//                  └──────────► HearthEngine ─► HearthStorage ─► HearthModel
//   hearthd ─► HearthStorageSQLite ─► HearthStorage, CSQLite, CXXHash (only this imports sqlite3 and xxhash)
//   hearthd ─► HearthStoragePostgres ─► HearthStorage, CLibPQ (only this imports libpq)
//   hearth ─► HearthRules (`rules check`)
//   hearthd, hearth ─► HearthCheck ─► HearthStorageSQLite, HearthEngine, HearthProtocol (`check`)
//   HearthRules ─► HearthModel, CRE2 (the Firestore Security Rules language: compile and evaluate; only it imports RE2)
//   HearthCrypto ─► COpenSSL (only HearthCrypto imports OpenSSL: TLS and token signatures)
//   HearthAuth ─► HearthCrypto, HearthProtocol, HearthModel (token verification, the admin key)
//   HearthLoop, HearthStorageSQLite ─► CLibcGNU (libc's GNU extensions: thread names, sync_file_range)
//   hearthd ─► CMalloc (jemalloc, linked as the daemon's allocator; only CMalloc names it)
// See docs/architecture.md.
let package = Package(
    name: "Hearth",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17)],
    products: [
        .executable(name: "hearthd", targets: ["hearthd"]),
        .executable(name: "hearth", targets: ["hearth"]),
        .library(name: "HearthClient", targets: ["HearthClient"]),
    ],
    targets: [
        // System libraries (Debian: libuv1-dev, libsqlite3-dev, libxxhash-dev, libsimdjson-dev, libssl-dev, libpq-dev, libre2-dev, libjemalloc-dev).
        .systemLibrary(name: "CLibUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CXXHash", pkgConfig: "libxxhash", providers: [.apt(["libxxhash-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CLibcGNU"),
        .systemLibrary(name: "CMalloc", providers: [.apt(["libjemalloc-dev"])]),
        .target(
            name: "CSimdJSON",
            cxxSettings: [.define("SIMDJSON_THREADS_ENABLED", to: "1"), .unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("simdjson"), .linkedLibrary("stdc++")]
        ),

        // OpenSSL 3 (Debian: libssl-dev): C wrappers keep OpenSSL's macros and ownership rules in C.
        .target(name: "COpenSSL", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        .target(name: "HearthCrypto", dependencies: ["COpenSSL"]),
        // Signed-token (JWT) verification and the admin key, on HearthCrypto's signatures.
        .target(name: "HearthAuth", dependencies: ["HearthCrypto", "HearthProtocol", "HearthModel"]),

        .target(name: "HearthModel"),
        // RE2 (Debian: libre2-dev) for the rules' regular expressions: linear time, Firestore's syntax.
        .target(name: "CRE2", linkerSettings: [.linkedLibrary("re2"), .linkedLibrary("stdc++")]),
        .target(name: "HearthRules", dependencies: ["HearthModel", "CRE2"]),
        .target(name: "HearthProtocol", dependencies: ["HearthModel", "CSimdJSON"]),
        .target(name: "HearthStorage", dependencies: ["HearthModel"]),
        .target(name: "HearthStorageSQLite", dependencies: ["HearthStorage", "HearthModel", "CSQLite", "CXXHash", "CLibcGNU"]),
        .target(name: "HearthStoragePostgres", dependencies: ["HearthStorage", "HearthModel", "CLibPQ"]),
        .target(name: "HearthEngine", dependencies: ["HearthStorage", "HearthModel"]),
        .target(name: "HearthLoop", dependencies: ["CLibUV", "HearthCrypto", "CLibcGNU"]),
        .target(name: "HearthServer", dependencies: ["HearthRules", "HearthAuth", "HearthLoop", "HearthCrypto", "HearthProtocol", "HearthEngine", "HearthStorage", "HearthModel"]),
        .target(name: "HearthCheck", dependencies: ["HearthStorageSQLite", "HearthEngine", "HearthProtocol", "HearthStorage", "HearthModel"]),
        .executableTarget(name: "hearthd", dependencies: ["CMalloc", "HearthServer", "HearthCrypto", "HearthCheck", "HearthStorageSQLite", "HearthStoragePostgres", "HearthStorage", "HearthModel"]),
        .executableTarget(name: "hearth", dependencies: ["HearthCheck", "HearthProtocol", "HearthModel", "HearthLoop", "HearthRules", "HearthCrypto"]),
        .target(name: "HearthTesting", dependencies: ["HearthCrypto"]),
        // Fuzz targets (`make fuzz`): libFuzzer when built with -sanitize=fuzzer, else a replayer of inputs.
        .target(name: "CFuzzShim"),
        .executableTarget(name: "hearth-fuzz",
                          dependencies: ["CFuzzShim", "HearthServer", "HearthEngine", "HearthProtocol", "HearthModel",
                                         "HearthStorage", "HearthStorageSQLite", "HearthLoop"],
                          path: "Sources/HearthFuzz"),
        // The Firestore-shaped Swift client library (Foundation + POSIX sockets; builds on macOS too).
        // On Linux it speaks TLS through HearthCrypto (OpenSSL); on Apple platforms through the system's TLS.
        .target(name: "HearthClient",
                dependencies: [.target(name: "HearthCrypto", condition: .when(platforms: [.linux]))],
                path: "clients/swift/Sources/HearthClient"),
        .testTarget(name: "HearthClientTests", dependencies: ["HearthClient", "HearthTesting"],
                    path: "clients/swift/Tests/HearthClientTests"),

        .testTarget(name: "HearthModelTests", dependencies: ["HearthModel"]),
        .testTarget(name: "HearthRulesTests", dependencies: ["HearthRules", "HearthModel"]),
        .testTarget(name: "HearthProtocolTests", dependencies: ["HearthProtocol", "HearthModel"]),
        .testTarget(name: "HearthStorageTests", dependencies: ["HearthStorage", "HearthStorageSQLite", "HearthStoragePostgres", "HearthTesting", "HearthModel"]),
        .testTarget(name: "HearthEngineTests", dependencies: ["HearthEngine", "HearthStorage", "HearthModel"]),
        .testTarget(name: "HearthCheckTests", dependencies: ["HearthCheck", "HearthEngine", "HearthStorageSQLite", "HearthStorage", "HearthProtocol", "HearthModel"]),
        .testTarget(name: "HearthLoopTests", dependencies: ["HearthLoop", "HearthCrypto", "HearthTesting"]),
        .testTarget(name: "HearthCryptoTests", dependencies: ["HearthCrypto", "HearthTesting"]),
        .testTarget(name: "HearthAuthTests", dependencies: ["HearthAuth", "HearthCrypto", "HearthModel", "HearthTesting"]),
        .testTarget(name: "HearthServerTests",
                    dependencies: ["HearthTesting", "HearthCrypto", "HearthServer", "HearthEngine", "HearthStorage", "HearthStorageSQLite", "HearthLoop", "HearthProtocol", "HearthModel", "CMalloc"]),
    ]
)

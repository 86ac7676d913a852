import Foundation
import HearthTesting
import Testing

/// `make install` into a temporary prefix (the binaries already built, through `install-built`), and the
/// `HEARTH_HOST`/`HEARTH_PORT` defaults every CLI command reads.
@Suite struct InstallAndEnvironmentTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    @Test func installBuiltIntoATemporaryPrefix() throws {
        let prefix = NSTemporaryDirectory() + "hearth-prefix-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let buildDir = URL(fileURLWithPath: DaemonProcess.binaryPath()).deletingLastPathComponent().path
        let make = try CLIProcess.run(["make", "-C", Self.repository, "install-built", "PREFIX=\(prefix)", "BUILD_DIR=\(buildDir)"],
                                      binary: "/usr/bin/env")
        #expect(make.status == 0, "\(make.stdout)\(make.stderr)")
        for file in ["bin/hearthd", "bin/hearth", "share/hearth/hearthd.service", "share/hearth/hearthd.env"] {
            #expect(FileManager.default.fileExists(atPath: prefix + "/" + file), "\(file) missing")
        }
        let mode = try FileManager.default.attributesOfItem(atPath: prefix + "/bin/hearthd")[.posixPermissions] as? Int
        #expect(mode == 0o755)
        let version = try CLIProcess.run(["--version"], binary: prefix + "/bin/hearthd")
        #expect(version.status == 0)
        #expect(version.stdout.hasPrefix("hearthd "), "\(version.stdout)")
        let cli = try CLIProcess.run(["--version"], binary: prefix + "/bin/hearth")
        #expect(cli.stdout.hasPrefix("hearth "), "\(cli.stdout)")
    }

    @Test func theUnitIsHardened() throws {
        let unit = try String(contentsOfFile: Self.repository + "/contrib/hearthd.service", encoding: .utf8)
        for line in ["DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes", "StateDirectory=hearth",
                     "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "EnvironmentFile=-/etc/hearth/hearthd.env"] {
            #expect(unit.contains("\n" + line + "\n"), "\(line) missing from contrib/hearthd.service")
        }
    }

    @Test func hostAndPortComeFromTheEnvironmentAndFlagsWin() throws {
        let daemon = try DaemonProcess()
        let byEnvironment = try CLIProcess.run(["ping"], environment: ["HEARTH_HOST": "127.0.0.1", "HEARTH_PORT": String(daemon.port)])
        #expect(byEnvironment.status == 0, "\(byEnvironment.stderr)")
        // A port nothing listens on in the environment, the right one as a flag.
        let flagWins = try CLIProcess.run(["ping", "--port", String(daemon.port)], environment: ["HEARTH_PORT": "1"])
        #expect(flagWins.status == 0, "\(flagWins.stderr)")
        let unreachable = try CLIProcess.run(["ping"], environment: ["HEARTH_PORT": "1"])
        #expect(unreachable.status == 3)
        let bad = try CLIProcess.run(["ping"], environment: ["HEARTH_PORT": "http"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("HEARTH_PORT must be a port from 1 to 65535, got 'http'"), "\(bad.stderr)")
    }
}

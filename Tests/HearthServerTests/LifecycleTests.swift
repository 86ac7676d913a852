import Foundation
import HearthTesting
import Testing

/// The real `hearthd`: one daemon per data directory, signals, start-up failures that name what is wrong and
/// change nothing, owner-only files, log levels.
@Suite struct LifecycleTests {
    /// A fresh path under the temp dir (not created).
    static func scratch(_ name: String) -> String {
        NSTemporaryDirectory() + "hearth-lifecycle-\(name)-" + UUID().uuidString
    }

    /// (name, size, modification time) of every file in `dir`.
    static func listing(_ dir: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir).sorted().map { name in
            let a = try FileManager.default.attributesOfItem(atPath: dir + "/" + name)
            return "\(name) \(a[.size] ?? "?") \((a[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)"
        }
    }

    static func mode(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int) ?? -1
    }

    // MARK: One daemon per data directory

    @Test func aSecondDaemonOnTheDataDirectoryIsRefusedAndTouchesNothing() throws {
        let first = try DaemonProcess()
        let c = try first.connect()
        #expect(try c.request(#"{"op":"set","path":"a/1","data":{"n":1}}"#).isOK)
        // The set is in SQLite once the background applier's backlog is empty: the directory is quiet then.
        // The applier gathers a backlog for up to 500 ms before it applies it: ask until it is empty (10 s at most).
        #expect(try c.waitForAppliedBacklog() == 0)
        let before = try Self.listing(first.dataDir)
        #expect(before.contains { $0.hasPrefix("LOCK ") })
        let second = try DaemonProcess.runToExit(["--port", "0", "--data-dir", first.dataDir])
        #expect(second.status != 0)
        #expect(second.stderr.contains("the data directory \(first.dataDir) is in use by pid \(first.pid)"), "\(second.stderr)")
        #expect(second.stderr.contains("\(first.dataDir)/LOCK"), "\(second.stderr)")
        #expect(try Self.listing(first.dataDir) == before, "the refused start changed the data directory")
        // The first daemon is undisturbed: it writes (the old failure: "commit seq 1 is not above the last seq 1").
        #expect(try c.request(#"{"op":"set","path":"a/2","data":{"n":2}}"#).isOK)
        #expect(try c.request(#"{"op":"get","path":"a/2"}"#).isOK)
        // Once it has stopped, the directory is free again.
        #expect(first.stop() == 0)
        try first.start()
        #expect(try first.connect().request(#"{"op":"get","path":"a/2"}"#)["doc"] is [String: Any])
    }

    // MARK: Signals

    @Test func sighupDoesNotStopTheDaemon() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        kill(daemon.pid, SIGHUP)
        #expect(daemon.waitForLog("SIGHUP: nothing to reload"))
        #expect(daemon.isRunning)
        #expect(try c.request(#"{"op":"set","path":"a/1","data":{}}"#).isOK)
        kill(daemon.pid, SIGHUP)
        #expect(daemon.waitForLog("SIGHUP: nothing to reload", occurrences: 2))
        #expect(try c.request(#"{"op":"ping"}"#).isOK)
        #expect(daemon.stop() == 0)
        #expect(daemon.log.contains("SIGTERM: shutting down (1 connection, 0 commits pending)"), "\(daemon.log)")
    }

    /// Counts in log lines agree with their nouns: "1 connection", "2 connections".
    @Test func logCountsUseTheSingularForOne() throws {
        let one = try DaemonProcess(extraArgs: ["--max-connections", "1"])
        #expect(one.waitForLog("serving at most 1 connection, "), "\(one.log)")
        let two = try DaemonProcess(extraArgs: ["--max-connections", "2"])
        #expect(two.waitForLog("serving at most 2 connections, "), "\(two.log)")
        let c1 = try two.connect(), c2 = try two.connect()
        #expect(try c1.request(#"{"op":"ping"}"#).isOK && c2.request(#"{"op":"ping"}"#).isOK)
        #expect(two.stop() == 0)
        #expect(two.log.contains("shutting down (2 connections, 0 commits pending)"), "\(two.log)")
    }

    // MARK: Start-up failures

    @Test func aStartThatCannotListenCreatesNothing() throws {
        let holder = try DaemonProcess()
        let dir = Self.scratch("eaddrinuse") + "/data"
        let r = try DaemonProcess.runToExit(["--port", String(holder.port), "--data-dir", dir])
        #expect(r.status != 0)
        #expect(r.stderr.contains("cannot listen on 127.0.0.1:\(holder.port): address already in use"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: URL(fileURLWithPath: dir).deletingLastPathComponent().path))
    }

    @Test func startErrorsSayWhatIsWrongAndNameThePath() throws {
        let root = Self.scratch("errors")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/plain"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        func start(_ args: String...) throws -> String {
            let r = try DaemonProcess.runToExit(["--port", "0"] + args)
            #expect(r.status != 0)
            return r.stderr
        }
        var out = try start("--data-dir", file)
        #expect(out.contains("the data directory \(file) is not a directory"), "\(out)")
        out = try start("--data-dir", file + "/data")
        #expect(out.contains("\(file) is not a directory"), "\(out)")
        // A damaged index catalog: the message names the file.
        let catalogDir = root + "/catalog"
        try FileManager.default.createDirectory(atPath: catalogDir, withIntermediateDirectories: true)
        try Data(#"{"nextId":2,"indexes":[{"id":1,"#.utf8).write(to: URL(fileURLWithPath: catalogDir + "/indexes.json"))
        out = try start("--data-dir", catalogDir)
        #expect(out.contains("\(catalogDir)/indexes.json"), "\(out)")
        #expect(out.contains("invalid JSON at byte"), "\(out)")
        // Bad flags.
        out = try start("--log-level", "loud")
        #expect(out.contains("--log-level must be debug, info, warn or error (got \"loud\")"), "\(out)")
        out = try start("--disk-reserve-mb", "-1")
        #expect(out.contains("--disk-reserve-mb needs a whole number"), "\(out)")
    }

    /// A read-only data directory, made with a read-only tmpfs (root ignores permission bits, not `ro`).
    @Test(.enabled(if: TmpfsMount.isAvailable, "needs root and permission to mount a tmpfs"))
    func aReadOnlyDataDirectoryIsReportedAsReadOnly() throws {
        let mount = try TmpfsMount(sizeMiB: 1)
        defer { mount.unmount() }
        try FileManager.default.createDirectory(atPath: mount.path + "/data", withIntermediateDirectories: false)
        try mount.remount(readOnly: true)
        var r = try DaemonProcess.runToExit(["--port", "0", "--data-dir", mount.path + "/data"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("the data directory \(mount.path)/data is read-only"), "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mount.path + "/data").isEmpty)
        r = try DaemonProcess.runToExit(["--port", "0", "--data-dir", mount.path + "/new"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("cannot create the data directory \(mount.path)/new"), "\(r.stderr)")
        #expect(r.stderr.contains("read-only file system"), "\(r.stderr)")
    }

    /// Permission denied, by running the daemon as `nobody` (root bypasses permission bits).
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
                   "needs root and setpriv to run the daemon as another user"))
    func aDataDirectoryOfAnotherUserIsPermissionDenied() throws {
        let root = Self.scratch("perm")
        try FileManager.default.createDirectory(atPath: root + "/data", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root)
        let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        // The binary must be reachable by nobody; if it is not, the check below would test the wrong thing.
        let probe = try DaemonProcess.runToExit(["--version"], prefix: nobody)
        try #require(probe.status == 0, "hearthd cannot run as nobody here: \(probe.stderr)")
        var r = try DaemonProcess.runToExit(["--port", "0", "--data-dir", root + "/data"], prefix: nobody)
        #expect(r.status != 0)
        #expect(r.stderr.contains("permission denied"), "\(r.stderr)")
        #expect(r.stderr.contains("\(root)/data"), "\(r.stderr)")
        r = try DaemonProcess.runToExit(["--port", "0", "--data-dir", root + "/data/sub"], prefix: nobody)
        #expect(r.stderr.contains("cannot create the data directory \(root)/data/sub"), "\(r.stderr)")
        #expect(r.stderr.contains("permission denied"), "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/data").isEmpty)
    }

    // MARK: Files and logs

    @Test func theDaemonsFilesAreOwnerOnly() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        #expect(try c.request(#"{"op":"set","path":"a/1","data":{"n":1}}"#).isOK)
        #expect(try c.request(#"{"op":"index","action":"create","collection":"a","fields":[["n","asc"],["m","asc"]]}"#).isOK)
        #expect(Self.mode(daemon.dataDir) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: daemon.dataDir).sorted()
        #expect(Set(["LOCK", "RESERVE", "hearth.db", "hearth.db-wal", "hearth.db-shm"]).isSubset(of: Set(files)), "\(files)")
        for name in files {
            #expect(Self.mode(daemon.dataDir + "/" + name) == 0o600, "\(name) is \(String(Self.mode(daemon.dataDir + "/" + name), radix: 8))")
        }
    }

    /// `--quiet` hides routine lines but not failures: a reserve it cannot create is a warning.
    @Test func quietStillLogsWarnings() throws {
        let dir = Self.scratch("quiet")
        try FileManager.default.createDirectory(atPath: dir + "/RESERVE", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let daemon = try DaemonProcess(dataDir: dir, extraArgs: ["--quiet"], readyText: "running without a disk reserve")
        #expect(daemon.log.contains(" hearthd warn: running without a disk reserve: cannot create \(dir)/RESERVE"), "\(daemon.log)")
        #expect(!daemon.log.contains(" info: "), "\(daemon.log)")
        #expect(daemon.stop() == 0)
        #expect(!daemon.log.contains("stopped"))
    }

    @Test func debugLogsConnections() throws {
        let daemon = try DaemonProcess(extraArgs: ["--log-level", "debug"])
        let c = try daemon.connect()
        #expect(try c.request(#"{"op":"ping"}"#).isOK)
        #expect(daemon.waitForLog(" hearthd debug: connection from 127.0.0.1:"))
    }

    /// `hearthd --help` and the flag table of docs/operations.md list the same flags.
    @Test func theOperationsFlagTableListsEveryFlag() throws {
        let help = try CLIProcess.run(["--help"], binary: DaemonProcess.binaryPath())
        let text = help.stdout
        #expect(help.status == 0)
        let flags = Set(text.split(separator: "\n").compactMap { line -> String? in
            let t = line.trimmingCharacters(in: .whitespaces)
            guard t.hasPrefix("--") else { return nil }
            return String(t.prefix { $0 != " " })
        })
        #expect(flags.count >= 14, "\(flags)")
        let doc = try String(contentsOf: DocsConsistencyTests.repoRoot.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let table = doc.split(separator: "\n").filter { $0.hasPrefix("| `--") }
        let documented = Set(table.map { row in String(row.dropFirst(3).prefix { $0 != " " && $0 != "`" }) })
        #expect(flags == documented, "in --help only: \(flags.subtracting(documented)); in the docs only: \(documented.subtracting(flags))")

        // Each default --help states ("(default 7411", "(default ./data;") is the table's default column.
        var helpText: [String: String] = [:]
        var current: String?
        for line in text.split(separator: "\n") {
            let t = line.trimmingCharacters(in: .whitespaces)
            if t.hasPrefix("--") { current = String(t.prefix { $0 != " " }); helpText[current!] = t; continue }
            if let c = current, line.hasPrefix("      ") { helpText[c, default: ""] += " " + t } else { current = nil }
        }
        var compared = 0
        for row in table {
            let cells = row.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            let flag = String(cells[1].dropFirst().prefix { $0 != " " && $0 != "`" })
            let tableDefault = cells[2].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            guard let help = helpText[flag], let r = help.range(of: "(default ") else { continue }
            let stated = String(help[r.upperBound...].prefix { $0 != ";" && $0 != ")" && $0 != " " && $0 != ":" })
            #expect(stated == tableDefault, "\(flag): --help says default \(stated), docs/operations.md says \(tableDefault)")
            compared += 1
        }
        #expect(compared >= 15, "defaults compared: \(compared)")
    }
}

/// A size-limited tmpfs mounted for one test (root only), unmounted and removed by `unmount()`.
final class TmpfsMount {
    let path: String

    /// Whether this process may mount a tmpfs (tried once, with a tiny one).
    static let isAvailable: Bool = {
        guard getuid() == 0 else { return false }
        guard let probe = try? TmpfsMount(sizeMiB: 1) else { return false }
        probe.unmount()
        return true
    }()

    init(sizeMiB: Int) throws {
        path = NSTemporaryDirectory() + "hearth-tmpfs-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let status = TmpfsMount.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(sizeMiB)m,mode=0755", "tmpfs", path])
        guard status == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw TestFailure("mount -t tmpfs failed with status \(status)")
        }
    }

    func remount(readOnly: Bool) throws {
        let status = TmpfsMount.run("/bin/mount", ["-o", "remount,\(readOnly ? "ro" : "rw")", path])
        guard status == 0 else { throw TestFailure("remounting \(path) failed with status \(status)") }
    }

    func unmount() {
        _ = TmpfsMount.run("/bin/umount", [path])
        try? FileManager.default.removeItem(atPath: path)
    }

    @discardableResult
    static func run(_ tool: String, _ args: [String]) -> Int32 {
        (try? CLIProcess.run(args, binary: tool))?.status ?? -1
    }
}

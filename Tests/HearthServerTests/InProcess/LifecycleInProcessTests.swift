import Foundation
@testable import HearthEngine
@testable import HearthServer
import HearthModel
import HearthStorage
import HearthTesting
import Testing

/// The server's log levels, index log lines, SIGHUP reloads and the disk-full state, in this process: the group
/// commit stepped by hand, a full disk simulated by failing a batch as the SQLite store does and by telling the
/// reserve how much space there is.
@Suite struct LifecycleInProcessTests {
    func responses(_ lines: [[String: Any]]) -> [[String: Any]] { lines.filter { $0["ok"] != nil } }

    /// What `SQLiteFailure` reports for SQLITE_FULL.
    static let fullError = HearthError.diskFull("commit apply (writer) failed: database or disk is full (SQLite result code 13)")

    // MARK: Log levels

    /// `--quiet` is `warn`: a failed commit still shows (error), and so does the index declaration it took back
    /// (warn); routine lines (an index declared: info) do not. At `info` all show, each line with its level.
    @Test(arguments: [Logger.Level.warn, .info])
    func failuresShowAtEveryLevelUpToWarn(level: Logger.Level) throws {
        let log = LogCapture()
        let s = try InProcessServer(logger: Logger(minimum: level, sink: log.sink))
        _ = try s.engine.createIndex(collectionID: "c", scope: .collection, fields: [.init(try FieldPath.parse("a"), .ascending),
                                                                                     .init(try FieldPath.parse("b"), .descending)])
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/x","data":{"a":1},"id":1}"#])
        let batch = try #require(s.takeBatch())
        s.publish(batch, error: HearthError(.unavailable, "storage: commit apply (writer) failed: disk I/O error (SQLite result code 10)"))
        #expect(responses(c.take()).first?.errorCode == "UNAVAILABLE")
        let failure = log.lines(containing: "commit of seq 1")
        #expect(failure.count == 1)
        #expect(failure.first?.contains(" hearthd error: ") == true, "\(failure)")
        // The declaration failed with the batch: it is taken back, and that is a warning.
        let indexLines = log.lines(containing: "index #1")
        #expect(indexLines.count == (level == .info ? 2 : 1), "\(log.lines)")
        #expect(indexLines.last?.contains(" hearthd warn: index #1 c (a asc, b desc): its declaration did not become durable and was taken back: there is no such index") == true, "\(indexLines)")
        #expect(s.engine.indexes.isEmpty)
        #expect(log.lines(containing: " hearthd info: ").isEmpty == (level == .warn))
    }

    @Test func levelsAreOrderedAndNamed() {
        #expect(Logger.Level.allCases.map(\.name) == ["debug", "info", "warn", "error"])
        #expect(Logger.Level(name: "warn") == .warn)
        #expect(Logger.Level(name: "quiet") == nil)
        let log = LogCapture()
        let logger = Logger(minimum: .warn, sink: log.sink)
        logger.debug("d"); logger.info("i"); logger.warn("w"); logger.error("e")
        #expect(log.lines.map { $0.split(separator: " ").dropFirst().joined(separator: " ") } == ["hearthd warn: w\n", "hearthd error: e\n"])
        let silent = LogCapture()
        Logger(minimum: nil, sink: silent.sink).error("nothing")
        #expect(silent.lines.isEmpty)
    }

    // MARK: Index lines

    /// Each index line names the one index that changed (with 500 indexes, a line listing all of them made a
    /// 9 MB log).
    @Test func indexLogLinesNameOnlyTheIndexThatChanged() throws {
        let log = LogCapture()
        let s = try InProcessServer(logger: Logger(minimum: .info, sink: log.sink))
        for i in 0..<5 {
            _ = try s.engine.createIndex(collectionID: "c\(i)", scope: .collection,
                                         fields: [.init(try FieldPath.parse("a"), .ascending), .init(try FieldPath.parse("b"), .ascending)])
        }
        try s.engine.dropIndex(id: 2)
        let lines = log.lines(containing: "index #")
        #expect(lines.count == 6)
        for (i, line) in lines.prefix(5).enumerated() {
            #expect(line.hasSuffix("index #\(i + 1) c\(i) (a asc, b asc): declared, building\n"), "\(line)")
        }
        #expect(lines.last?.hasSuffix("index #2 c1 (a asc, b asc): dropped\n") == true, "\(lines.last ?? "")")
        #expect(lines.allSatisfy { $0.components(separatedBy: "#").count == 2 }, "one index per line")
    }

    // MARK: SIGHUP

    @Test func reloadLogsAndRunsEachReloadable() throws {
        let log = LogCapture()
        let s = try InProcessServer(logger: Logger(minimum: .info, sink: log.sink))
        s.server.reload(reason: "SIGHUP")
        #expect(log.lines(containing: "SIGHUP: nothing to reload").count == 1)
        var version = 1
        s.server.onReload("rules") { version += 1; return "rules v\(version)" }
        s.server.onReload("broken") { throw HearthError.invalid("rules.json: invalid JSON at byte 3") }
        s.server.onReload("after") { "still reloaded" }
        s.server.reload(reason: "SIGHUP")
        #expect(version == 2)
        #expect(log.lines(containing: "SIGHUP: reloaded rules: rules v2").count == 1)
        let broken = log.lines(containing: "could not reload broken")
        #expect(broken.count == 1)
        #expect(broken.first?.contains(" hearthd warn: ") == true)
        #expect(broken.first?.contains("rules.json: invalid JSON at byte 3") == true)
        #expect(log.lines(containing: "SIGHUP: reloaded after: still reloaded").count == 1)
    }

    // MARK: Disk full

    /// A commit that fails for a full disk releases the reserve and puts the server in the disk-full state: other
    /// writes are refused at once with RESOURCE_EXHAUSTED "disk full", deletes still commit, reads and listeners
    /// carry on, `ping` says so; once space is back the reserve is re-created and writes are accepted, without a
    /// restart. Entering and leaving are logged once each, at levels `--quiet` shows.
    @Test func aFullDiskRefusesWritesButNotDeletesAndRecovers() throws {
        let log = LogCapture()
        let s = try InProcessServer(logger: Logger(minimum: .warn, sink: log.sink)) { $0.diskReserveBytes = 1 << 20 }
        let reserve = s.server.reserve
        s.server.prepareDiskReserve()
        #expect(FileManager.default.fileExists(atPath: reserve.path))
        let listener = s.connect()
        listener.write([#"{"op":"listen","query":{"collection":"c"},"id":"L"}"#])
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/a","data":{"n":1}}"#, #"{"op":"set","path":"c/b","data":{"n":2}}"#])
        s.flush()
        _ = c.take()
        _ = listener.take()

        // The disk fills: the batch fails as the SQLite store fails it.
        reserve.freeBytes = { 0 }
        c.write([#"{"op":"set","path":"c/x","data":{"n":3},"id":1}"#])
        s.publish(try #require(s.takeBatch()), error: Self.fullError)
        let failed = try #require(responses(c.take()).first)
        #expect(failed.errorCode == "RESOURCE_EXHAUSTED")
        #expect(failed.errorMessage?.contains("disk full") == true, "\(failed)")
        #expect(!FileManager.default.fileExists(atPath: reserve.path), "the reserve was released")

        // Writes that store something are refused at once; nothing is queued.
        c.write([#"{"op":"set","path":"c/y","data":{"n":4},"id":2}"#,
                 #"{"op":"update","path":"c/a","data":{"n":5},"id":3}"#,
                 #"{"op":"commit","writes":[{"op":"delete","path":"c/a"},{"op":"set","path":"c/z","data":{}}],"id":4}"#,
                 #"{"op":"index","action":"create","collection":"c","fields":[["n","asc"],["m","asc"]],"id":5}"#,
                 #"{"op":"ping","id":6}"#])
        #expect(s.takeBatch() == nil)
        let refused = responses(c.take())
        #expect(refused.map { $0["id"] as? Int } == [2, 3, 4, 5, 6])
        for r in refused.prefix(4) {
            #expect(r.errorCode == "RESOURCE_EXHAUSTED", "\(r)")
            #expect(r.errorMessage?.contains("disk full") == true, "\(r)")
        }
        #expect(refused.last?["diskFull"] as? Bool == true)

        // Deletes (and a commit of deletes and a verify) still commit; reads and listeners carry on.
        c.write([#"{"op":"delete","path":"c/a","id":7}"#,
                 #"{"op":"commit","writes":[{"op":"verify","path":"c/b","precondition":{"exists":true}},{"op":"delete","path":"c/missing"}],"id":8}"#])
        s.flush()
        let deleted = responses(c.take())
        #expect(deleted.map { $0.isOK } == [true, true], "\(deleted)")
        c.write([#"{"op":"get","path":"c/b","id":9}"#])
        #expect(responses(c.take()).first?.isOK == true)
        let events = listener.take().filter { $0["type"] as? String == "snapshot" }
        #expect(events.count == 1)
        #expect(((events.first?["changes"] as? [[String: Any]])?.first?["type"] as? String) == "removed")

        // Space comes back: the next write finds it, re-creates the reserve and goes through.
        reserve.freeBytes = { 1 << 30 }
        c.write([#"{"op":"set","path":"c/y","data":{"n":6},"id":10}"#, #"{"op":"ping","id":11}"#])
        s.flush()
        let recovered = responses(c.take())
        #expect(recovered.first?.isOK == true, "\(recovered)")
        #expect(recovered.last?["diskFull"] as? Bool == false)
        #expect(FileManager.default.fileExists(atPath: reserve.path))
        #expect(s.engine.diskFull == nil)

        let entered = log.lines(containing: "disk full: commit of seq")
        #expect(entered.count == 1, "\(log.lines)")
        #expect(entered.first?.contains(" hearthd error: ") == true)
        #expect(entered.first?.contains("released the 1 MiB reserve \(reserve.path)") == true, "\(entered)")
        let left = log.lines(containing: "disk space available again")
        #expect(left.count == 1, "\(log.lines)")
        #expect(left.first?.contains(" hearthd warn: ") == true)
    }

    /// Without room for the reserve at start the server starts in the disk-full state, and leaves it on its
    /// own check (the one the timer runs every second) once there is room.
    @Test func noRoomForTheReserveAtStartIsADiskFullStart() throws {
        let log = LogCapture()
        let s = try InProcessServer(logger: Logger(minimum: .warn, sink: log.sink)) { $0.diskReserveBytes = 1 << 20 }
        let reserve = s.server.reserve
        // A directory where the reserve goes keeps it from being created; the disk reports no space.
        try FileManager.default.createDirectory(atPath: reserve.path, withIntermediateDirectories: false)
        reserve.freeBytes = { 0 }
        s.server.prepareDiskReserve()
        #expect(s.engine.diskFull != nil)
        #expect(log.lines(containing: "disk full: at start, cannot create \(reserve.path)").count == 1, "\(log.lines)")
        let c = s.connect()
        c.write([#"{"op":"set","path":"c/x","data":{},"id":1}"#])
        #expect(responses(c.take()).first?.errorCode == "RESOURCE_EXHAUSTED")
        // Room, but the reserve still cannot be made: the state stays.
        reserve.freeBytes = { 1 << 30 }
        s.server.checkDiskSpace()
        #expect(s.engine.diskFull != nil)
        // Room and nothing in the way: the state ends.
        try FileManager.default.removeItem(atPath: reserve.path)
        s.server.checkDiskSpace()
        #expect(s.engine.diskFull == nil)
        #expect(log.lines(containing: "disk space available again").count == 1)
        #expect(FileManager.default.fileExists(atPath: reserve.path))
    }

    /// A reserve that cannot be made while the disk has room is a warning, not a disk-full start.
    @Test func aReserveThatCannotBeMadeWithRoomToSpareIsAWarning() throws {
        let log = LogCapture()
        let s = try InProcessServer(logger: Logger(minimum: .warn, sink: log.sink)) { $0.diskReserveBytes = 1 << 20 }
        try FileManager.default.createDirectory(atPath: s.server.reserve.path, withIntermediateDirectories: false)
        s.server.reserve.freeBytes = { 1 << 30 }
        s.server.prepareDiskReserve()
        #expect(s.engine.diskFull == nil)
        #expect(log.lines(containing: "running without a disk reserve: cannot create \(s.server.reserve.path)").count == 1, "\(log.lines)")
    }
}

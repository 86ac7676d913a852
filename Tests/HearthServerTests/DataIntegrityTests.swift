import Foundation
import HearthStorageSQLite
import HearthTesting
import Testing

/// Damaged stored data against the real daemon and the real CLI: raw bytes flipped in a stopped daemon's
/// database file are answered with DATA_LOSS naming the document (nothing invalid on the wire), the others
/// are served, `hearth check` and `hearthd --check` report it; and the index catalog lives in the store.
@Suite(.serialized) struct DataIntegrityTests {
    /// A stopped daemon's data dir with c/a, c/b and c/d (each holding a unique marker) and a ready composite
    /// index on c.
    static func stoppedStore() throws -> DaemonProcess {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        for id in ["a", "b", "d"] {
            #expect(try c.request(#"{"op":"set","path":"c/\#(id)","data":{"v":"marker-\#(id)\#(id)\#(id)\#(id)","n":\#(id == "b" ? 2 : 1)}}"#).isOK)
        }
        #expect(try c.request(#"{"op":"index","action":"create","collection":"c","fields":[["n","asc"],["v","desc"]]}"#).isOK)
        #expect(daemon.stop() == 0)
        return daemon
    }

    /// Flips one byte (to 0x8F, which is never valid UTF-8 on its own) inside every copy of `marker` in the
    /// pages of `tables` in the (closed) database file, found from their root pages (the tables are small:
    /// the root is their only page); returns how many copies there were.
    static func flip(_ marker: String, in dataDir: String, tables: [String] = ["documents", "changes"]) throws -> Int {
        let db = try SQLiteConnection(path: dataDir + "/hearth.db", role: "test", create: false)
        let pageSize = Int(try db.queryInt("PRAGMA page_size"))
        var pages: [Int] = []
        for t in tables {
            #expect(try db.queryInt("SELECT count(*) FROM dbstat WHERE name = '\(t)'") == 1, "\(t) fits one page")
            pages.append(Int(try db.queryInt("SELECT rootpage FROM sqlite_schema WHERE name = '\(t)'")))
        }
        db.close()
        let url = URL(fileURLWithPath: dataDir + "/hearth.db")
        var data = [UInt8](try Data(contentsOf: url))
        let m = Array(marker.utf8)
        var count = 0
        for page in pages {
            var i = (page - 1) * pageSize
            let end = page * pageSize
            while i + m.count <= end {
                if data[i] == m[0] && Array(data[i..<(i + m.count)]) == m {
                    data[i + m.count - 2] = 0x8F
                    count += 1
                    i += m.count
                } else {
                    i += 1
                }
            }
        }
        try Data(data).write(to: url)
        return count
    }

    /// Reads a response line and checks it is valid UTF-8 and one JSON object.
    static func response(_ c: WireClient) throws -> [String: Any] {
        let bytes = try c.readLineBytes()
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw TestFailure("the response line is not valid UTF-8: \(bytes)")
        }
        guard let obj = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw TestFailure("not a JSON object: \(text)")
        }
        return obj
    }

    @Test func flippedBytesAreDataLossForThatDocumentOnly() throws {
        let daemon = try Self.stoppedStore()
        // The document's row and its change-log row (an index entry holds the value too; it is left alone, so
        // the index b-tree stays in order and the check below names the document only).
        let copies = try Self.flip("marker-bbbb", in: daemon.dataDir)
        #expect(copies == 2)
        try daemon.start()
        let c = try daemon.connect()
        for line in [#"{"op":"get","path":"c/b"}"#, #"{"op":"get","path":"c/b"}"#] {
            try c.send(line)
            let r = try Self.response(c)
            #expect(r.errorCode == "DATA_LOSS")
            #expect(r.errorMessage?.contains("c/b") == true)
        }
        for id in ["a", "d"] {
            try c.send(#"{"op":"get","path":"c/\#(id)"}"#)
            let doc = try Self.response(c)["doc"] as? [String: Any]
            #expect((doc?["data"] as? [String: Any])?["v"] as? String == "marker-\(id)\(id)\(id)\(id)")
        }
        // A query that meets it fails, naming it; one that does not is served.
        try c.send(#"{"op":"query","collection":"c"}"#)
        let all = try Self.response(c)
        #expect(all.errorCode == "DATA_LOSS" && all.errorMessage?.contains("c/b") == true)
        try c.send(#"{"op":"query","collection":"c","where":[["n","==",1]],"orderBy":[["v","desc"]]}"#)
        let ones = try Self.response(c)
        #expect((ones["docs"] as? [[String: Any]])?.compactMap { $0["path"] as? String } == ["c/d", "c/a"], "\(ones)")
        // A listener resuming over the damaged change-log entry (c/b's, at seq 2) gets a reset, and the
        // daemon serves on.
        try c.send(#"{"op":"listen","id":"l","path":"c/d","resumeAfter":0}"#)
        #expect(try Self.response(c).isOK)
        _ = try Self.response(c)   // the listener's first snapshot
        try c.send(#"{"op":"listen","id":"q","query":{"collection":"c","where":[["n","==",1]]},"resumeAfter":1}"#)
        let listen = try Self.response(c)
        #expect(listen.isOK, "\(listen)")
        let snapshot = try Self.response(c)
        #expect(snapshot["reset"] as? Bool == true, "\(snapshot)")
        #expect((snapshot["changes"] as? [[String: Any]])?.count == 2, "\(snapshot)")
        try c.send(#"{"op":"ping"}"#)
        #expect(try Self.response(c).isOK)
        // Logged loudly, once for the document however often it was asked for (the log is complete once its
        // last line is in).
        #expect(daemon.stop() == 0)
        #expect(daemon.waitForLog(containing: "hearthd info: stopped"))
        let logged = daemon.log.components(separatedBy: "\n").filter { $0.contains("DATA LOSS: document c/b") }
        #expect(logged.count == 1, "\(daemon.log)")

        let check = try CLIProcess.run(["check", "--data-dir", daemon.dataDir])
        #expect(check.status == 1, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("DAMAGE document: document c/b is damaged"), "\(check.stdout)")
        #expect(check.stdout.contains("DAMAGE change log: the change log entry of document c/b"), "\(check.stdout)")
        #expect(!check.stdout.contains("c/a") && !check.stdout.contains("c/d "), "\(check.stdout)")

        let refused = try CLIProcess.run(["--port", "0", "--data-dir", daemon.dataDir, "--check"], binary: DaemonProcess.binaryPath())
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("document c/b is damaged"), "\(refused.stderr)")
        #expect(refused.stderr.contains("refusing to start"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("listening"))
    }

    /// A database that lost its contents (here truncated to nothing after a clean stop) is refused by the
    /// daemon and by `hearth check` with DATA_LOSS saying what happened and what to do, and neither turns the
    /// directory into a new, empty store: the next start is refused the same way.
    @Test func aDatabaseThatLostItsContentsIsNeitherServedNorReplaced() throws {
        let daemon = try Self.stoppedStore()
        let db = daemon.dataDir + "/hearth.db"
        #expect(truncate(db, 0) == 0)
        for _ in 0..<2 {
            let refused = try CLIProcess.run(["--port", "0", "--data-dir", daemon.dataDir], binary: DaemonProcess.binaryPath())
            #expect(refused.status == 2, "\(refused.stderr)")
            #expect(refused.stderr.contains("cannot start") && refused.stderr.contains("shows that this data directory held one"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("listening"))
            let check = try CLIProcess.run(["check", "--data-dir", daemon.dataDir])
            #expect(check.status == 3, "\(check.stdout)\(check.stderr)")
            #expect(check.stderr.contains("Restore the newest backup"), "\(check.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: db)).isEmpty, "a store was created in its place")
        }
        // Deleted rather than truncated: the same, and nothing is created.
        try FileManager.default.removeItem(atPath: db)
        let check = try CLIProcess.run(["check", "--data-dir", daemon.dataDir])
        #expect(check.status == 3 && check.stderr.contains("DATA_LOSS") && check.stderr.contains("Restore the newest backup"), "\(check.stderr)")
        let refused = try CLIProcess.run(["--port", "0", "--data-dir", daemon.dataDir], binary: DaemonProcess.binaryPath())
        #expect(refused.status == 2 && refused.stderr.contains("is missing or holds no store"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: db))
    }

    /// A damaged b-tree page (not a row: the page's own structure) met by a query on a reader thread fails
    /// that query with an error naming the store's damage; the reader, the connection and the daemon serve on.
    @Test func aDamagedPageFailsTheReadOnlyAndTheReaderServesOn() throws {
        let daemon = try Self.stoppedStore()
        let db = try SQLiteConnection(path: daemon.dataDir + "/hearth.db", role: "test", create: false)
        let pageSize = Int(try db.queryInt("PRAGMA page_size"))
        #expect(try db.queryInt("SELECT count(*) FROM dbstat WHERE name = 'index_entries'") == 1, "the index fits one page")
        let root = Int(try db.queryInt("SELECT rootpage FROM sqlite_schema WHERE name = 'index_entries'"))
        db.close()
        // The page's type byte (0x0A: a leaf of an index b-tree) becomes one no page has.
        let url = URL(fileURLWithPath: daemon.dataDir + "/hearth.db")
        var data = [UInt8](try Data(contentsOf: url))
        let at = (root - 1) * pageSize + (root == 1 ? 100 : 0)
        #expect(data[at] == 0x0A)
        data[at] = 0x07
        try Data(data).write(to: url)
        try daemon.start()
        let c = try daemon.connect(), other = try daemon.connect()
        for (op, line) in [("query", #"{"op":"query","collection":"c","where":[["n","==",1]],"orderBy":[["v","desc"]]}"#),
                           ("count", #"{"op":"count","collection":"c"}"#),
                           ("query", #"{"op":"query","collection":"c"}"#)] {
            try c.send(line)
            let r = try Self.response(c)
            #expect(r.isOK == false, "\(r)")
            #expect(r.errorCode == "DATA_LOSS", "\(r)")
            #expect(r.errorMessage?.hasPrefix("\(op): ") == true, "\(r)")
            // The same connection and another one are served meanwhile; documents stay readable by path.
            try c.send(#"{"op":"ping"}"#)
            #expect(try Self.response(c).isOK)
            try other.send(#"{"op":"get","path":"c/a"}"#)
            let doc = try Self.response(other)["doc"] as? [String: Any]
            #expect((doc?["data"] as? [String: Any])?["v"] as? String == "marker-aaaa")
        }
        // Logged loudly (the log is complete once its last line is in).
        #expect(daemon.stop() == 0)
        #expect(daemon.waitForLog(containing: "hearthd info: stopped"))
        #expect(daemon.log.contains("DATA LOSS"), "\(daemon.log)")
    }

    /// Bytes with a good checksum (damage a version-3 store carried into its migration) still never reach a
    /// client: the engine verifies what it reads before splicing it.
    @Test func servableBytesAreCheckedBeyondTheChecksum() throws {
        let daemon = try Self.stoppedStore()
        let db = try SQLiteConnection(path: daemon.dataDir + "/hearth.db", role: "test", create: false)
        try db.exec("""
            UPDATE documents SET data = CAST(substr(data, 1, 10) || x'8F' || substr(data, 12) AS BLOB) WHERE id = 'b';
            UPDATE documents SET checksum = hearth_checksum(collection, id, data, create_us, update_us, seq) WHERE id = 'b';
            UPDATE documents SET data = CAST(replace(CAST(data AS TEXT), '"n":', '"n":' || char(10)) AS BLOB) WHERE id = 'd';
            UPDATE documents SET checksum = hearth_checksum(collection, id, data, create_us, update_us, seq) WHERE id = 'd';
            """, "damaging rows behind their checksums")
        db.close()
        try daemon.start()
        let c = try daemon.connect()
        for id in ["b", "d"] {
            try c.send(#"{"op":"get","path":"c/\#(id)"}"#)
            let r = try Self.response(c)
            #expect(r.errorCode == "DATA_LOSS" && r.errorMessage?.contains("c/\(id)") == true, "\(r)")
            try c.send(#"{"op":"getAll","paths":["c/a","c/\#(id)"]}"#)
            #expect(try Self.response(c).errorCode == "DATA_LOSS")
        }
        // The exact plan splices without decoding: it verifies too.
        try c.send(#"{"op":"query","collection":"c","orderBy":[["__name__","asc"]],"limit":3}"#)
        #expect(try Self.response(c).errorCode == "DATA_LOSS")
        try c.send(#"{"op":"get","path":"c/a"}"#)
        #expect(try Self.response(c)["doc"] is [String: Any])
        #expect(daemon.stop() == 0)
        let check = try CLIProcess.run(["check", "--data-dir", daemon.dataDir])
        #expect(check.status == 1)
        #expect(check.stdout.contains("document c/b is damaged") && check.stdout.contains("document c/d is damaged"), "\(check.stdout)")
    }

    @Test func aCleanStorePassesTheChecks() throws {
        let daemon = try Self.stoppedStore()
        let check = try CLIProcess.run(["check", "--data-dir", daemon.dataDir])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("3 documents"), "\(check.stdout)")
        #expect(check.stdout.contains("1 declared indexes (catalog: store): no damage found"), "\(check.stdout)")
        // No terminal: no progress on stderr.
        #expect(check.stderr.isEmpty, "\(check.stderr)")
        try daemon.start()   // a clean store still starts as before
        #expect(daemon.stop() == 0)
        let checked = try DaemonProcess(dataDir: daemon.dataDir, extraArgs: ["--check"])
        #expect(checked.log.contains("check: 3 documents"), "\(checked.log)")
        #expect(checked.stop() == 0)

        let missing = try CLIProcess.run(["check", "--data-dir", daemon.dataDir + "/nowhere"])
        #expect(missing.status == 3)
        #expect(!FileManager.default.fileExists(atPath: daemon.dataDir + "/nowhere"))
    }

    @Test func theIndexCatalogLivesInTheStore() throws {
        let daemon = try Self.stoppedStore()
        #expect(!FileManager.default.fileExists(atPath: daemon.dataDir + "/indexes.json"))
        try daemon.start()
        let c = try daemon.connect()
        let list = try c.request(#"{"op":"index","action":"list"}"#)
        let indexes = list["indexes"] as? [[String: Any]]
        #expect(indexes?.count == 1 && indexes?.first?["state"] as? String == "ready", "\(list)")
        // The index serves the query it was declared for.
        let q = try c.request(#"{"op":"query","collection":"c","where":[["n","==",1]],"orderBy":[["v","desc"]]}"#)
        #expect((q["docs"] as? [[String: Any]])?.count == 2, "\(q)")
        // A drop is durable too.
        #expect(try c.request(#"{"op":"index","action":"drop","indexId":1}"#).isOK)
        #expect(daemon.stop() == 0)
        try daemon.start()
        #expect((try daemon.connect().request(#"{"op":"index","action":"list"}"#)["indexes"] as? [[String: Any]])?.isEmpty == true)
        #expect(daemon.stop() == 0)
        #expect(try CLIProcess.run(["check", "--data-dir", daemon.dataDir]).status == 0)
    }

    /// A data dir from before the catalog moved into the store: `indexes.json` beside a store without one.
    @Test func anOldIndexesJSONIsImportedOnce() throws {
        let daemon = try Self.stoppedStore()
        let db = try SQLiteConnection(path: daemon.dataDir + "/hearth.db", role: "test", create: false)
        try db.exec("DELETE FROM index_catalog", "making the store look older")
        db.close()
        let file = daemon.dataDir + "/indexes.json"
        let json = #"{"nextId":2,"indexes":[{"id":1,"collection":"c","scope":"collection","fields":[["n","asc"],["v","desc"]],"state":"ready"}]}"#
        try Data((json + "\n").utf8).write(to: URL(fileURLWithPath: file))
        try daemon.start()
        let c = try daemon.connect()
        let list = try c.request(#"{"op":"index","action":"list"}"#)
        #expect((list["indexes"] as? [[String: Any]])?.first?["state"] as? String == "ready", "\(list)")
        let q = try c.request(#"{"op":"query","collection":"c","where":[["n","==",1]],"orderBy":[["v","desc"]]}"#)
        #expect((q["docs"] as? [[String: Any]])?.count == 2, "\(q)")
        // The next index gets the next id.
        let created = try c.request(#"{"op":"index","action":"create","collection":"c","fields":[["v","asc"],["n","asc"]]}"#)
        #expect((created["index"] as? [String: Any])?["id"] as? Int == 2, "\(created)")
        #expect(daemon.stop() == 0)
        #expect(daemon.waitForLog(containing: "hearthd info: stopped"))
        #expect(daemon.log.contains("imported \(file)"), "\(daemon.log)")
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(FileManager.default.fileExists(atPath: file + ".imported"))
        // From now on the store alone holds it.
        try daemon.start()
        let again = try daemon.connect().request(#"{"op":"index","action":"list"}"#)
        #expect((again["indexes"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == [1, 2], "\(again)")
        #expect(daemon.stop() == 0)
        #expect(try CLIProcess.run(["check", "--data-dir", daemon.dataDir]).status == 0)
    }
}

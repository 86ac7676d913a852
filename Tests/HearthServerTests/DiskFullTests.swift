import Foundation
import HearthTesting
import Testing

/// The real `hearthd` on a small tmpfs that it fills: writes are refused with RESOURCE_EXHAUSTED "disk full",
/// deletes still commit (the reserve was released for them), reads and listeners carry on, and once space is
/// freed outside the daemon it takes writes again without a restart. Needs root (to mount); skipped otherwise.
@Suite struct DiskFullTests {
    @Test(.enabled(if: TmpfsMount.isAvailable, "needs root and permission to mount a tmpfs"))
    func aFullDiskKeepsDeletesReadsAndListenersAndRecoversWithoutARestart() throws {
        let mount = try TmpfsMount(sizeMiB: 24)
        defer { mount.unmount() }
        // Space the test frees later, as an operator would by removing something else on the disk.
        let ballast = mount.path + "/ballast"
        #expect(FileManager.default.createFile(atPath: ballast, contents: Data(repeating: 1, count: 6 << 20)))
        let daemon = try DaemonProcess(dataDir: mount.path + "/data", extraArgs: ["--disk-reserve-mb", "2"])
        defer { daemon.kill9() }
        #expect(FileManager.default.fileExists(atPath: mount.path + "/data/RESERVE"))

        let watcher = try daemon.connect()
        let w = try daemon.connect()
        #expect(try w.request(#"{"op":"set","path":"watched/1","data":{"n":1}}"#).isOK)
        try watcher.send(#"{"op":"listen","path":"watched/1","id":"L"}"#)
        var first = try watcher.readObject()
        while first["ok"] == nil { first = try watcher.readObject() }
        #expect(first.isOK)
        #expect(try watcher.readObject()["type"] as? String == "snapshot")

        // Fill the disk with 100 KB documents until a write fails and the next one is refused at once. (On
        // the first failure the store syncs and empties its commit log, whose blocks may make room again: then
        // writes are accepted and the filling goes on.)
        let pad = String(repeating: "x", count: 100_000)
        var failure: [String: Any]?
        var refused: [String: Any] = [:]
        var written = 0
        var failures = 0
        while written < 1000 && failures < 10 {
            let r = try w.request(#"{"op":"set","path":"c/d\#(written)","data":{"pad":"\#(pad)"}}"#)
            if r.isOK { written += 1; continue }
            failures += 1
            #expect(daemon.waitForLog("disk full: commit of seq", occurrences: failures))
            refused = try w.request(#"{"op":"set","path":"c/new\#(failures)","data":{"n":1}}"#)
            if !refused.isOK { failure = r; break }
            #expect(daemon.waitForLog("disk space available again", occurrences: failures))
        }
        let full = try #require(failure, "24 MiB never filled")
        #expect(written > 10)
        #expect(full.errorCode == "RESOURCE_EXHAUSTED", "\(full)")
        #expect(full.errorMessage?.contains("disk full") == true, "\(full)")
        #expect(!FileManager.default.fileExists(atPath: mount.path + "/data/RESERVE"), "the reserve was released")
        let fullLogged = daemon.logCount(" hearthd error: disk full")
        #expect(fullLogged == failures, "each entry into the disk-full state is logged once: \(daemon.log)")
        let availableLogged = daemon.logCount("disk space available again")

        // Other writes are refused at once, with the same clear error.
        #expect(refused.errorCode == "RESOURCE_EXHAUSTED", "\(refused)")
        #expect(refused.errorMessage?.contains("disk full") == true, "\(refused)")
        #expect(try w.request(#"{"op":"ping"}"#)["diskFull"] as? Bool == true)
        // Reads work; deletes commit; the listener sees its document go.
        #expect(try w.request(#"{"op":"get","path":"c/d0"}"#)["doc"] is [String: Any])
        #expect(try w.request(#"{"op":"delete","path":"watched/1"}"#).isOK)
        let removed = try watcher.readObject()
        #expect(removed["type"] as? String == "snapshot", "\(removed)")
        #expect(removed["doc"] == nil || removed["doc"] is NSNull, "\(removed)")
        for i in 0..<5 {
            let r = try w.request(#"{"op":"delete","path":"c/d\#(i)"}"#)
            #expect(r.isOK, "delete \(i) while the disk is full: \(r)")
        }
        #expect(try w.request(#"{"op":"get","path":"c/d0"}"#)["doc"] is NSNull)
        #expect(daemon.logCount(" hearthd error: disk full") == fullLogged, "logged once: \(daemon.log)")

        // Space comes back outside the daemon: the next write finds it and goes through.
        try FileManager.default.removeItem(atPath: ballast)
        let again = try w.request(#"{"op":"set","path":"c/new","data":{"n":1}}"#)
        #expect(again.isOK, "\(again)")
        #expect(try w.request(#"{"op":"ping"}"#)["diskFull"] as? Bool == false)
        #expect(daemon.waitForLog("disk space available again", occurrences: availableLogged + 1))
        #expect(daemon.logCount("disk space available again") == availableLogged + 1)
        #expect(FileManager.default.fileExists(atPath: mount.path + "/data/RESERVE"), "the reserve was re-created")
        #expect(daemon.stop() == 0)
    }
}

import Foundation
import HearthTesting
import Testing

/// Concurrency and crash safety against the real daemon.
@Suite(.serialized) struct DurabilityTests {
    @Test func hundredConnectionsTimesHundredIncrementsIsExact() throws {
        let daemon = try DaemonProcess()
        let setup = try daemon.connect()
        #expect(try setup.request(#"{"op":"set","path":"counters/c","data":{"n":0}}"#).isOK)
        let errors = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 100) { _ in
            do {
                let c = try daemon.connect()
                var batch = ""
                for i in 0..<100 { batch += #"{"op":"update","id":\#(i),"path":"counters/c","data":{"n":{"$increment":1}}}"# + "\n" }
                try c.sendRaw(Array(batch.utf8))
                for _ in 0..<100 where !(try c.readObject(timeout: 60)).isOK { errors.update { $0 += 1 } }
            } catch {
                errors.update { $0 += 1 }
            }
        }
        #expect(errors.value == 0)
        let doc = try setup.request(#"{"op":"get","path":"counters/c"}"#)["doc"] as! [String: Any]
        #expect((doc["data"] as! [String: Any])["n"] as? Int == 10_000)
    }

    @Test func killNineLosesNoAcknowledgedWriteAndSeqKeepsIncreasing() throws {
        let daemon = try DaemonProcess()
        let acked = Locked<[String: Int]>([:])   // path -> highest acknowledged value
        let maxSeq = Locked(0)
        let stop = Locked(false)
        let group = DispatchGroup()
        for w in 0..<8 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                guard let c = try? daemon.connect() else { return }
                var i = 0
                while !stop.value {
                    i += 1
                    guard let r = try? c.request(#"{"op":"set","path":"crash/w\#(w)","data":{"v":\#(i)}}"#, timeout: 5), r.isOK else { return }
                    acked.update { $0["crash/w\(w)"] = i }
                    let s = r["seq"] as? Int ?? 0
                    maxSeq.update { $0 = max($0, s) }
                }
            }
        }
        Thread.sleep(forTimeInterval: 1.0)
        daemon.kill9()
        stop.update { $0 = true }
        group.wait()
        let before = acked.value
        #expect(before.count == 8)
        try daemon.start()
        let c = try daemon.connect()
        for (path, v) in before {
            let doc = try c.request(#"{"op":"get","path":"\#(path)"}"#)["doc"] as? [String: Any]
            let got = (doc?["data"] as? [String: Any])?["v"] as? Int ?? -1
            #expect(got >= v, "\(path): acknowledged \(v), found \(got)")
        }
        let w = try c.request(#"{"op":"set","path":"crash/after","data":{}}"#)
        #expect((w["seq"] as? Int ?? 0) > maxSeq.value)
    }

    @Test func sigtermShutsDownGracefullyAndDataSurvives() throws {
        let daemon = try DaemonProcess()
        let c = try daemon.connect()
        var lines = ""
        for i in 0..<200 { lines += #"{"op":"set","path":"grace/d\#(i)","data":{"i":\#(i)}}"# + "\n" }
        try c.sendRaw(Array(lines.utf8))
        for _ in 0..<200 { #expect(try c.readObject().isOK) }
        #expect(daemon.stop() == 0)
        #expect(daemon.log.contains("shutting down"))
        try daemon.start()
        let r = try daemon.connect().request(#"{"op":"get","path":"grace/d199"}"#)
        #expect(((r["doc"] as? [String: Any])?["data"] as? [String: Any])?["i"] as? Int == 199)
    }
}

/// A value behind a lock, for test threads.
final class Locked<T>: @unchecked Sendable {
    private var v: T
    private let lock = NSLock()
    init(_ v: T) { self.v = v }
    var value: T { lock.withLock { v } }
    func update(_ f: (inout T) -> Void) { lock.withLock { f(&v) } }
}

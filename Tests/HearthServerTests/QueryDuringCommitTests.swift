import Foundation
import HearthTesting
import Testing

/// Queries run at once while a commit batch is being made durable, and stay exact: a query made of several
/// store reads (here an OR, one index range per branch) never mixes two commits, and the seq it reports
/// never goes back.
@Suite struct QueryDuringCommitTests {
    @Test func queriesDuringCommitsAreNeverTorn() throws {
        let daemon = try DaemonProcess()
        let setup = try daemon.connect()
        #expect(try setup.request(#"{"op":"commit","writes":[{"op":"set","path":"pair/x","data":{"k":1,"n":0}},{"op":"set","path":"pair/y","data":{"k":2,"n":0}}]}"#).isOK)
        // Writers: every commit moves both documents to the same new n.
        let stop = Locked(false)
        let commits = Locked(0)
        let group = DispatchGroup()
        for w in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                guard let c = try? daemon.connect() else { return }
                var n = w
                while !stop.value {
                    n += 4
                    let line = #"{"op":"commit","writes":[{"op":"set","path":"pair/x","data":{"k":1,"n":\#(n)}},{"op":"set","path":"pair/y","data":{"k":2,"n":\#(n)}},{"op":"set","path":"noise/w\#(w)","data":{"n":\#(n)}}]}"#
                    guard (try? c.request(line))?.isOK == true else { return }
                    commits.update { $0 += 1 }
                }
            }
        }
        let reader = try daemon.connect()
        var lastSeq = 0
        var torn = 0
        let query = #"{"op":"query","collection":"pair","where":{"or":[["k","==",1],["k","==",2]]}}"#
        // At least 1,500 queries, and on until the writers have made more than 100 commits meanwhile (on a
        // loaded machine the writers' threads may start late): the queries must overlap commits to mean anything.
        var queries = 0
        while queries < 1500 || (commits.value <= 100 && queries < 200_000) {
            queries += 1
            let r = try reader.request(query)
            #expect(r.isOK, "\(r)")
            let docs = (r["docs"] as? [[String: Any]]) ?? []
            let ns = docs.map { (($0["data"] as? [String: Any])?["n"] as? Int) ?? -1 }
            if docs.count != 2 || ns[0] != ns[1] { torn += 1 }
            let seq = r["seq"] as? Int ?? 0
            #expect(seq >= lastSeq, "seq went back from \(lastSeq) to \(seq)")
            lastSeq = seq
        }
        stop.update { $0 = true }
        group.wait()
        #expect(torn == 0, "\(torn) torn results")
        #expect(commits.value > 100, "writers kept committing (\(commits.value) commits)")
    }
}

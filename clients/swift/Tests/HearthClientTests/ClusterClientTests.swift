import Foundation
import HearthTesting
import Testing
import HearthClient

/// The client over three nodes of one database (`hearthd --postgres`): given every node's address, it moves
/// to another node when its node dies, first catches up there with the seq it has seen, and its listener
/// resumes without a gap or a duplicate.
@Suite(.serialized) struct ClusterClientTests {
    @Test func aClientMovesToAnotherNodeWhenItsNodeDies() async throws {
        let c = try ClusterNodes()
        _ = try c.committer()
        var settings = HearthSettings()
        settings.heartbeatInterval = 0.1
        let db = try Hearth(addresses: c.ports.map { "127.0.0.1:\($0)" }, settings: settings)
        defer { db.terminate() }
        let col = db.collection("m")
        for i in 0..<6 { try await col.document("d\(i)").setData(["n": i]) }
        let rec = Recorder<QuerySnapshot>()
        let reg = col.order(by: "n", descending: true).limit(to: 4).addSnapshotListener(rec.callback)
        defer { reg.remove() }
        #expect(try await rec.wait(for: 1)[0].documents.map(\.documentID) == ["d5", "d4", "d3", "d2"])

        // The first address is the node the client is on: it dies, and writes go on through the next one.
        c[0].kill9()
        var wrote = false
        for _ in 0..<200 where !wrote {
            do {
                try await col.document("d9").setData(["n": 9])
                wrote = true
            } catch {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
        }
        #expect(wrote, "a write went through another node")
        let doc = try await col.document("d9").getDocument()
        #expect(doc.get("n") as? Int == 9, "the client reads its write on the node it moved to")
        try await rec.wait { $0.last?.documents.map(\.documentID) == ["d9", "d5", "d4", "d3"] }
        ListenerTests.checkConsistent(rec.values)
        #expect(!rec.values.dropFirst().contains { $0.documentChanges.isEmpty }, "no empty or repeated snapshot")
        #expect(throws: HearthError.self) { _ = try Hearth(addresses: ["127.0.0.1"]) }
    }
}

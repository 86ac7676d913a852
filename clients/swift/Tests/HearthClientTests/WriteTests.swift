import Foundation
import Testing
import HearthClient

/// set / merge / mergeFields / update / delete / add, transforms, and batches.
@Suite struct WriteTests {
    let env: TestEnv
    init() throws { env = try TestEnv() }

    @Test func setMergeUpdateAndDelete() async throws {
        let ref = env.db.collection("customers").document("c1")
        try await ref.setData(["name": "Ada", "address": ["city": "London", "zip": "N1"], "tags": ["a"]])
        try await ref.setData(["address": ["zip": "N2"], "visits": 1], merge: true)
        var d = try #require(try await ref.getDocument().data())
        #expect((d["address"] as? [String: Any])?["city"] as? String == "London")
        #expect((d["address"] as? [String: Any])?["zip"] as? String == "N2")
        #expect(d["name"] as? String == "Ada" && d["visits"] as? Int == 1)

        try await ref.setData(["name": "Ignored", "address": ["city": "Paris", "zip": "X"]], mergeFields: ["address.city"])
        d = try #require(try await ref.getDocument().data())
        #expect(d["name"] as? String == "Ada")
        #expect((d["address"] as? [String: Any])?["city"] as? String == "Paris")
        #expect((d["address"] as? [String: Any])?["zip"] as? String == "N2")

        try await ref.updateData(["address.city": "Rome", "visits": FieldValue.increment(Int64(2)), "tags": FieldValue.arrayUnion(["b", "a"]),
                                  "name": FieldValue.delete(), "seen": FieldValue.serverTimestamp()])
        let snap = try await ref.getDocument()
        #expect(snap.get("address.city") as? String == "Rome" && snap.get("address.zip") as? String == "N2")
        #expect(snap.get("visits") as? Int == 3)
        #expect(snap.get("tags") as? [String] == ["a", "b"])
        #expect(snap.get("name") == nil)
        #expect(snap.get("seen") as? Timestamp == snap.updateTime, "the server timestamp is the commit time")

        try await ref.updateData(["tags": FieldValue.arrayRemove(["a"]), "ratio": FieldValue.increment(0.5)])
        let after = try await ref.getDocument()
        #expect(after.get("tags") as? [String] == ["b"] && after.get("ratio") as? Double == 0.5)

        try await ref.delete()
        #expect(!(try await ref.getDocument().exists))
        try await ref.delete()   // deleting a missing document succeeds
        #expect(await hearthCode { try await ref.updateData(["a": 1]) } == .notFound)
    }

    @Test func addDocumentMakesTheIDOnTheClientAndDocumentIDValue() async throws {
        let departments = env.db.collection("departments")
        let ref = try await departments.addDocument(data: ["departmentId": FieldValue.documentID(), "name": "R&D"])
        #expect(ref.documentID.count == 20 && ref.parent.path == "departments")
        let snap = try await ref.getDocument()
        #expect(snap.get("departmentId") as? String == ref.documentID)

        let pre = departments.document()
        try await pre.setData(["id": FieldValue.documentID()])
        #expect(try await pre.getDocument().get("id") as? String == pre.documentID)
    }

    @Test func subcollectionsAndReferencePaths() async throws {
        let post = env.db.collection("users").document("u1").collection("posts").document("p1")
        #expect(post.path == "users/u1/posts/p1")
        #expect(post.parent.parent?.path == "users/u1")
        #expect(env.db.collection("users").parent == nil)
        try await post.setData(["title": "hello"])
        #expect(try await env.db.document("users/u1/posts/p1").getDocument().get("title") as? String == "hello")
    }

    @Test func batchIsAtomic() async throws {
        let a = env.db.document("accounts/a"), b = env.db.document("accounts/b")
        try await a.setData(["balance": 100])
        // The second write fails (create of an existing document): nothing is applied.
        let failing = env.db.batch()
        failing.updateData(["balance": FieldValue.increment(Int64(-30))], forDocument: a)
        failing.createDocument(["balance": 30], forDocument: a)
        failing.setData(["balance": 30], forDocument: b)
        do {
            try await failing.commit()
            Issue.record("the batch committed")
        } catch let e as HearthError {
            #expect(e.code == .alreadyExists)
            #expect(e.message.contains("writes[1]"))
        }
        #expect(try await a.getDocument().get("balance") as? Int == 100)
        #expect(!(try await b.getDocument().exists))

        let ok = env.db.batch()
        ok.updateData(["balance": FieldValue.increment(Int64(-30))], forDocument: a)
            .setData(["balance": 30], forDocument: b)
            .setData(["note": "moved"], forDocument: b, merge: true)
        try await ok.commit()
        #expect(try await a.getDocument().get("balance") as? Int == 70)
        let bSnap = try await b.getDocument()
        #expect(bSnap.get("balance") as? Int == 30 && bSnap.get("note") as? String == "moved")
        #expect(await hearthCode { try await ok.commit() } == .invalidArgument, "a batch commits once")

        let del = env.db.batch()
        del.deleteDocument(a).deleteDocument(b)
        try await del.commit()
        let after = try await env.db.getAll([a, b])
        #expect(after.map(\.exists) == [false, false])
        try await env.db.batch().commit()   // empty: nothing to send
    }

    @Test func batchWithAnUnencodableValueSendsNothing() async throws {
        struct Opaque {}
        let batch = env.db.batch()
        batch.setData(["ok": 1], forDocument: env.db.document("b/1"))
        batch.setData(["bad": Opaque()], forDocument: env.db.document("b/2"))
        #expect(await hearthCode { try await batch.commit() } == .invalidArgument)
        #expect(!(try await env.db.document("b/1").getDocument().exists))
    }

    @Test func getAllKeepsOrderAndReportsMissing() async throws {
        try await env.db.document("g/1").setData(["n": 1])
        try await env.db.document("g/3").setData(["n": 3])
        let snaps = try await env.db.getAll(["g/3", "g/2", "g/1"].map { env.db.document($0) })
        #expect(snaps.map(\.exists) == [true, false, true])
        #expect(snaps.map(\.documentID) == ["3", "2", "1"])
    }

    /// Many writes in flight at once on the one connection all complete, each answered correctly.
    @Test func pipelinedWritesAndReads() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                group.addTask { try await env.db.document("pipe/d\(i)").setData(["i": i]) }
            }
            try await group.waitForAll()
        }
        let results = try await withThrowingTaskGroup(of: (Int, Int?).self) { group in
            for i in 0..<200 {
                group.addTask { (i, try await env.db.document("pipe/d\(i)").getDocument().get("i") as? Int) }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(results.count == 200 && results.allSatisfy { $0.key == $0.value })
        #expect(try await env.db.collection("pipe").count.getAggregation().countValue == 200)
    }
}

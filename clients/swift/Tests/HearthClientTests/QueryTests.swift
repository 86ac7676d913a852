import Foundation
import Testing
import HearthClient

/// Filters, ordering, limits, cursors, aggregations and collection groups against the real daemon.
@Suite struct QueryTests {
    let env: TestEnv
    let calls: CollectionReference

    init() async throws {
        env = try TestEnv()
        calls = env.db.collection("call_records")
        // Composite indexes the tests' queries need, declared as in Firestore (ready at once: no data yet).
        for fields in [#"[["customerId","asc"],["duration","asc"]]"#, #"[["callDate","asc"],["duration","asc"]]"#,
                       #"[["tags","array-contains"],["duration","asc"]]"#] {
            try env.createIndex(collection: "call_records", fields: fields)
        }
        let day = { (d: Int) in Timestamp(rfc3339: "2026-11-0\(d)T09:00:00Z")! }
        let batch = env.db.batch()
        batch.setData(["customerId": "c1", "callDate": day(1), "duration": 30, "tags": ["a"]], forDocument: calls.document("r1"))
        batch.setData(["customerId": "c1", "callDate": day(3), "duration": 45, "tags": ["a", "b"]], forDocument: calls.document("r2"))
        batch.setData(["customerId": "c2", "callDate": day(2), "duration": 12, "tags": ["c"]], forDocument: calls.document("r3"))
        batch.setData(["customerId": "c1", "callDate": day(2), "duration": 5, "tags": []], forDocument: calls.document("r4"))
        batch.setData(["customerId": "c3", "callDate": day(4), "duration": 12.5, "tags": ["b"]], forDocument: calls.document("r5"))
        try await batch.commit()
    }

    func ids(_ q: Query) async throws -> [String] { try await q.getDocuments().documents.map(\.documentID) }

    @Test func filters() async throws {
        #expect(try await ids(calls.whereField("customerId", isEqualTo: "c1")) == ["r1", "r2", "r4"])
        #expect(try await ids(calls.whereField("customerId", isNotEqualTo: "c1")) == ["r3", "r5"])
        #expect(try await ids(calls.whereField("duration", isGreaterThanOrEqualTo: 12)) == ["r3", "r5", "r1", "r2"])
        #expect(try await ids(calls.whereField("duration", isGreaterThan: 12)) == ["r5", "r1", "r2"])
        #expect(try await ids(calls.whereField("duration", isLessThan: 12.5)) == ["r4", "r3"])
        #expect(try await ids(calls.whereField("duration", isLessThanOrEqualTo: 12.5)) == ["r4", "r3", "r5"])
        #expect(try await ids(calls.whereField("tags", arrayContains: "a")) == ["r1", "r2"])
        #expect(try await ids(calls.whereField("tags", arrayContainsAny: ["b", "c"])) == ["r2", "r3", "r5"])
        #expect(try await ids(calls.whereField("customerId", in: ["c2", "c3"])) == ["r3", "r5"])
        #expect(try await ids(calls.whereField("customerId", notIn: ["c1", "c2"])) == ["r5"])
        #expect(try await ids(calls.whereField("callDate", isGreaterThan: Timestamp(rfc3339: "2026-11-02T12:00:00Z")!)) == ["r2", "r5"])
        #expect(try await ids(calls.whereField("callDate", isLessThan: Date(timeIntervalSince1970: 1_793_534_400))) == ["r1"])
        #expect(try await ids(calls.whereField(FieldPath.documentID(), isEqualTo: "r3")) == ["r3"])
        #expect(try await ids(calls.whereField(FieldPath.documentID(), in: [calls.document("r1"), calls.document("r4")])) == ["r1", "r4"])
    }

    @Test func compositeFilters() async throws {
        let or = calls.whereFilter(.orFilter([.whereField("customerId", isEqualTo: "c2"), .whereField("duration", in: [5, 30])]))
        #expect(try await ids(or) == ["r1", "r3", "r4"])
        let nested = calls.whereFilter(.andFilter([
            .whereField("duration", isGreaterThan: 1),
            .orFilter([.whereField("customerId", isEqualTo: "c3"), .whereField("tags", arrayContains: "a")]),
        ]))
        #expect(try await Set(ids(nested)) == ["r1", "r2", "r5"])
        let mixed = calls.whereField("customerId", isEqualTo: "c1")
            .whereFilter(.orFilter([.whereField("duration", isEqualTo: 5), .whereField("duration", isEqualTo: 45)]))
        #expect(try await Set(ids(mixed)) == ["r2", "r4"])
    }

    @Test func orderLimitsAndLimitToLast() async throws {
        #expect(try await ids(calls.order(by: "duration")) == ["r4", "r3", "r5", "r1", "r2"])
        #expect(try await ids(calls.order(by: "duration", descending: true).limit(to: 2)) == ["r2", "r1"])
        #expect(try await ids(calls.order(by: "duration").limit(toLast: 2)) == ["r1", "r2"])
        #expect(try await ids(calls.order(by: FieldPath(["callDate"])).order(by: "duration")) == ["r1", "r4", "r3", "r2", "r5"])
        let snap = try await calls.limit(to: 3).getDocuments()
        #expect(snap.count == 3 && !snap.isEmpty && snap.documentChanges.map(\.newIndex) == [0, 1, 2])
        #expect(snap.documentChanges.allSatisfy { $0.type == .added && $0.oldIndex == DocumentChange.notFound })
        #expect(try await calls.whereField("customerId", isEqualTo: "nobody").getDocuments().isEmpty)
    }

    @Test func valueCursors() async throws {
        let byDuration = calls.order(by: "duration")
        #expect(try await ids(byDuration.start(at: [12])) == ["r3", "r5", "r1", "r2"])
        #expect(try await ids(byDuration.start(after: [12])) == ["r5", "r1", "r2"])
        #expect(try await ids(byDuration.end(at: [12.5])) == ["r4", "r3", "r5"])
        #expect(try await ids(byDuration.end(before: [12.5])) == ["r4", "r3"])
        #expect(try await ids(byDuration.start(after: [12, "r3"]).limit(to: 1)) == ["r5"])
    }

    /// Paging with `start(afterDocument:)` across ties, forwards and descending, and with an inequality
    /// filter that adds an implicit order.
    @Test func documentCursorsPageExactly() async throws {
        for i in 0..<7 { try await env.db.document("ties/t\(i)").setData(["score": i / 3, "i": i]) }
        let ties = env.db.collection("ties")
        var seen: [String] = []
        var page = try await ties.order(by: "score").limit(to: 2).getDocuments()
        while let last = page.documents.last {
            seen += page.documents.map(\.documentID)
            page = try await ties.order(by: "score").limit(to: 2).start(afterDocument: last).getDocuments()
        }
        #expect(seen == (0..<7).map { "t\($0)" })

        let desc = ties.order(by: "score", descending: true)
        let first = try await desc.limit(to: 3).getDocuments()
        #expect(first.documents.map(\.documentID) == ["t6", "t5", "t4"])
        #expect(try await ids(desc.start(afterDocument: first.documents[1]).limit(to: 2)) == ["t4", "t3"])
        #expect(try await ids(desc.end(beforeDocument: first.documents[2])) == ["t6", "t5"])

        let ranged = ties.whereField("i", isGreaterThan: 1)
        let r1 = try await ranged.limit(to: 2).getDocuments()
        #expect(r1.documents.map(\.documentID) == ["t2", "t3"])
        #expect(try await ids(ranged.start(afterDocument: r1.documents[1]).limit(to: 2)) == ["t4", "t5"])
        #expect(try await ids(ranged.start(atDocument: r1.documents[1]).end(atDocument: r1.documents[1])) == ["t3"])
    }

    @Test func countAndAggregations() async throws {
        let c1 = calls.whereField("customerId", isEqualTo: "c1")
        let count = try await c1.count.getAggregation(source: .server)
        #expect(count.count == 3 && count.countValue == 3)
        let agg = try await calls.aggregate([.count(), .sum("duration"), .average("duration")]).getAggregation()
        #expect(agg.get(.count()) as? Int == 5)
        #expect(agg.get(.sum("duration")) as? Double == 104.5)
        #expect(agg.get(.average("duration")) as? Double == 20.9)
        let none = try await calls.whereField("customerId", isEqualTo: "x").aggregate([.average("duration"), .sum("duration")]).getAggregation()
        #expect(none.get(.average("duration")) is NSNull && none.get(.sum("duration")) as? Int == 0)
        #expect(try await calls.limit(to: 2).count.getAggregation().countValue == 2)
    }

    @Test func collectionGroupsAndSubcollections() async throws {
        try await env.db.document("users/u1/posts/p1").setData(["n": 1])
        try await env.db.document("users/u2/posts/p2").setData(["n": 2])
        try await env.db.document("posts/p0").setData(["n": 0])
        let all = try await env.db.collectionGroup("posts").getDocuments()
        #expect(Set(all.documents.map(\.reference.path)) == ["users/u1/posts/p1", "users/u2/posts/p2", "posts/p0"])
        #expect(try await ids(env.db.collection("users/u1/posts")) == ["p1"])
        let byKey = try await env.db.collectionGroup("posts").order(by: FieldPath.documentID()).limit(to: 2).getDocuments()
        #expect(byKey.documents.map(\.reference.path) == ["posts/p0", "users/u1/posts/p1"])
        #expect(try await env.db.collectionGroup("posts").start(afterDocument: byKey.documents[1]).getDocuments().documents.map(\.documentID) == ["p2"])
    }

    @Test func invalidQueriesAndMissingIndexes() async throws {
        #expect(await hearthCode { _ = try await calls.whereField("customerId", in: []).getDocuments() } == .invalidArgument)
        #expect(await hearthCode { _ = try await calls.limit(toLast: 1).getDocuments() } == .invalidArgument)
        do {
            _ = try await calls.whereField("customerId", isEqualTo: "c1").order(by: "callDate", descending: true).getDocuments()
            Issue.record("a query needing a composite index ran")
        } catch let e as HearthError {
            #expect(e.code == .failedPrecondition && e.message.contains(#""op":"index""#))
        }
        try env.raw(#"{"op":"index","action":"create","collection":"call_records","fields":[["customerId","asc"],["callDate","desc"]]}"#)
        var result: [String] = []
        for _ in 0..<100 {
            if let r = try? await ids(calls.whereField("customerId", isEqualTo: "c1").order(by: "callDate", descending: true)) { result = r; break }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        #expect(result == ["r2", "r4", "r1"])
        struct Opaque {}
        #expect(await hearthCode { _ = try await calls.whereField("x", isEqualTo: Opaque()).getDocuments() } == .invalidArgument)
        let missing = try await calls.document("nope").getDocument()
        #expect(await hearthCode { _ = try await calls.start(afterDocument: missing).getDocuments() } == .invalidArgument)
    }
}

import HearthModel
import HearthStorage
import Testing

/// The storage contract, for every backend: documents, groups, ordering. (Change log and retention:
/// ChangeLogConformanceTests; threads: ConcurrencyConformanceTests.)
@Suite struct DocumentStoreConformanceTests {
    @Test(arguments: Backend.allCases)
    func emptyStore(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        #expect(try f.store.lastSeq() == 0)
        #expect(try f.store.oldestResumableSeq() == 0)
        #expect(try f.store.get(path("users/u1")) == nil)
        #expect(try f.store.list(collection: collection("users"), afterID: nil, limit: 10).isEmpty)
        #expect(try f.store.changes(after: 0, limit: 10) == [])
        try f.store.apply([])  // an empty group is a no-op
        #expect(try f.store.lastSeq() == 0)
    }

    @Test(arguments: Backend.allCases)
    func putGetRoundTripsEveryField(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        let longID = String(repeating: "é", count: 750)  // 1,500 UTF-8 bytes, the longest valid ID
        let allBytes = (0...255).map(UInt8.init) + (0...255).map(UInt8.init).reversed()
        let docs = [
            StoredDocument(path: path("users/u1"), data: bytes(#"{"name":"Ada"}"#),
                           createTime: Timestamp(micros: 1_000_001), updateTime: Timestamp(micros: 2_000_002), seq: 1),
            StoredDocument(path: path("users/u1/user-feed/p9"), data: allBytes,
                           createTime: Timestamp(micros: Timestamp.minMicros), updateTime: Timestamp(micros: Timestamp.maxMicros), seq: 1),
            StoredDocument(path: path("部署/café/メンバー/\(longID)"), data: [],
                           createTime: Timestamp(micros: -5), updateTime: Timestamp(micros: 0), seq: 1),
            StoredDocument(path: path("c/a\u{0}b"), data: [0], createTime: Timestamp(micros: 7), updateTime: Timestamp(micros: 7), seq: 1),
        ]
        #expect(docs[2].path.id.utf8.count == 1500)
        let mutations = docs.map { Mutation(path: $0.path, before: nil, after: $0) }
        try f.store.apply([CommitRecord(seq: 1, commitTime: Timestamp(micros: 2_000_002), mutations: mutations)])
        for doc in docs {
            #expect(try f.store.get(doc.path) == doc)
        }
        #expect(try f.store.get(path("users/u2")) == nil)
        #expect(try f.store.get(path("users/u1/user-feed/p8")) == nil)
        #expect(try f.store.lastSeq() == 1)
    }

    @Test(arguments: Backend.allCases)
    func updateKeepsOneDocumentAndDeleteRemovesIt(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        let created = h.put("users/u1", bytes("v1"))
        let updated = h.put("users/u1", bytes("v2"))
        try f.store.apply([created])
        try f.store.apply([updated])
        let doc = try #require(try f.store.get(path("users/u1")))
        #expect(doc.data == bytes("v2"))
        #expect(doc.seq == 2)
        #expect(doc.createTime == created.commitTime)
        #expect(doc.updateTime == updated.commitTime)
        #expect(try f.store.list(collection: collection("users"), afterID: nil, limit: 10).count == 1)

        try f.store.apply([h.delete("users/u1")])
        #expect(try f.store.get(path("users/u1")) == nil)
        #expect(try f.store.list(collection: collection("users"), afterID: nil, limit: 10).isEmpty)
        #expect(try f.store.lastSeq() == 3)
        // Deleting a missing document is a valid (logged) mutation that changes nothing.
        try f.store.apply([h.delete("users/ghost")])
        #expect(try f.store.lastSeq() == 4)
    }

    @Test(arguments: Backend.allCases)
    func aGroupAppliesAllOrNothing(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        let group = [h.put("g/a", bytes("1")), h.put("g/b", bytes("2")), h.commit([("g/a", nil), ("g/c", bytes("3"))])]
        try f.store.apply(group)
        #expect(try f.store.lastSeq() == 3)
        #expect(try f.store.get(path("g/a")) == nil)
        #expect(try idBytes(f.store.list(collection: collection("g"), afterID: nil, limit: 10)) == [bytes("b"), bytes("c")])

        // The third commit's seq is not above the second's: nothing of the group may land.
        var bad = History(startingAfter: 3)
        let good1 = bad.put("g/x", bytes("x")), good2 = bad.put("g/y", bytes("y"))
        var broken = bad.put("g/z", bytes("z"))
        broken.seq = good2.seq
        let error = thrownError { () throws(HearthError) in try f.store.apply([good1, good2, broken]) }
        #expect(error?.code == .internal)
        #expect(try f.store.lastSeq() == 3)
        #expect(try f.store.get(path("g/x")) == nil)
        #expect(try f.store.changes(after: 3, limit: 10) == [])
        // The store stays usable.
        try f.store.apply([good1, good2])
        #expect(try f.store.lastSeq() == 5)
        #expect(try f.store.get(path("g/y"))?.data == bytes("y"))
    }

    @Test(arguments: Backend.allCases)
    func seqNotAboveLastSeqIsRejected(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History(startingAfter: 4)
        try f.store.apply([h.put("c/a", bytes("a"))])  // seq 5; seqs need not start at 1
        #expect(try f.store.lastSeq() == 5)
        for seq: UInt64 in [5, 3, 0] {
            let c = commitAt(seq: seq, putting: "c/b")
            let error = thrownError { () throws(HearthError) in try f.store.apply([c]) }
            #expect(error?.code == .internal, "seq \(seq)")
        }
        let tooBig = CommitRecord(seq: UInt64(Int64.max) + 1, commitTime: Timestamp(micros: 0), mutations: [])
        #expect(thrownError { () throws(HearthError) in try f.store.apply([tooBig]) }?.code == .internal)
        #expect(try f.store.get(path("c/b")) == nil)
        try f.store.apply([h.put("c/b", bytes("b"))])
        #expect(try f.store.lastSeq() == 6)
    }

    @Test(arguments: Backend.allCases)
    func anImageWithAnotherPathIsRejected(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        var c = h.put("c/a", bytes("a"))
        c.mutations[0].after?.path = path("c/b")
        #expect(thrownError { () throws(HearthError) in try f.store.apply([c]) }?.code == .internal)
        #expect(try f.store.lastSeq() == 0)
    }

    @Test(arguments: Backend.allCases)
    func listOrdersByUTF8Bytes(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        // "é" precomposed (C3 A9) and decomposed (65 CC 81) are different IDs; "a\0b" sorts between "a" and "aa".
        let ids = ["é", "a", "B", "e\u{301}", "a\u{0}b", "aa", "Z", "~", "ab", "\u{7F}", "𝄞", "\u{FFFD}", "0", "a b", "Ab"]
        var h = History()
        try f.store.apply([h.commit(ids.map { ("c/\($0)", bytes($0)) })])
        let listed = try f.store.list(collection: collection("c"), afterID: nil, limit: 100)
        let expected = ids.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        #expect(idBytes(listed) == expected)
        #expect(listed.count == ids.count)
        let position = { (id: String) in expected.firstIndex(of: Array(id.utf8))! }
        #expect(position("B") < position("a") && position("a") < position("é"))
        #expect(position("a") < position("a\u{0}b") && position("a\u{0}b") < position("aa"))
        for doc in listed { #expect(doc.data == Array(doc.path.id.utf8)) }
        #expect(try f.store.get(path("c/e\u{301}"))?.data == bytes("e\u{301}"))
        #expect(try f.store.get(path("c/é"))?.data == bytes("é"))
    }

    @Test(arguments: Backend.allCases)
    func listPaginatesWithAfterIDAndLimit(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        let ids = (0..<10).map { "doc\($0)" }
        var h = History()
        try f.store.apply([h.commit(ids.map { ("c/\($0)", bytes($0)) })])
        var pages: [[String]] = []
        var after: String? = nil
        while true {
            let page = try f.store.list(collection: collection("c"), afterID: after, limit: 3)
            if page.isEmpty { break }
            pages.append(page.map(\.path.id))
            after = page.last!.path.id
        }
        #expect(pages == [["doc0", "doc1", "doc2"], ["doc3", "doc4", "doc5"], ["doc6", "doc7", "doc8"], ["doc9"]])
        // afterID need not exist; it is a position in byte order.
        #expect(try f.store.list(collection: collection("c"), afterID: "doc4a", limit: 2).map(\.path.id) == ["doc5", "doc6"])
        #expect(try f.store.list(collection: collection("c"), afterID: "a", limit: 1).map(\.path.id) == ["doc0"])
        #expect(try f.store.list(collection: collection("c"), afterID: "doc9", limit: 5).isEmpty)
        #expect(try f.store.list(collection: collection("c"), afterID: nil, limit: 0).isEmpty)
        #expect(try f.store.list(collection: collection("c"), afterID: nil, limit: Int.max).count == 10)
    }

    @Test(arguments: Backend.allCases)
    func collectionsAndSubcollectionsAreSeparate(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        try f.store.apply([h.commit([
            ("users/u1", bytes("u1")), ("users/u2", bytes("u2")),
            ("users/u1/user-feed/p1", bytes("p1")), ("users/u1/user-feed/p9", bytes("p9")),
            ("users/u3/user-feed/p1", bytes("u3p1")),  // under a document that does not exist
            ("users/u1/other/o1", bytes("o1")), ("users2/x", bytes("x")), ("user/y", bytes("y")),
        ])])
        func ids(_ c: String) throws -> [String] { try f.store.list(collection: collection(c), afterID: nil, limit: 100).map(\.path.id) }
        #expect(try ids("users") == ["u1", "u2"])
        #expect(try ids("users/u1/user-feed") == ["p1", "p9"])
        #expect(try ids("users/u3/user-feed") == ["p1"])
        #expect(try ids("users/u2/user-feed").isEmpty)
        #expect(try ids("users/u1/other") == ["o1"])
        #expect(try ids("users2") == ["x"])
        #expect(try ids("user") == ["y"])
        #expect(try ids("user-feed").isEmpty)
        let listed = try f.store.list(collection: collection("users/u1/user-feed"), afterID: nil, limit: 100)
        #expect(listed.map(\.path) == [path("users/u1/user-feed/p1"), path("users/u1/user-feed/p9")])
    }
}

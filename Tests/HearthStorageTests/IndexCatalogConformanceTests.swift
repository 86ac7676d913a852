import HearthModel
import HearthStorage
import Testing

/// The index catalog a commit carries (`CommitRecord.indexCatalog`), for every backend: stored in the
/// commit's transaction, replaced by the next commit that carries one, untouched by the others, absent
/// from the change log.
@Suite struct IndexCatalogConformanceTests {
    @Test(arguments: Backend.allCases)
    func aNewStoreHasNoCatalog(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        #expect(try f.store.indexCatalog() == nil)
        var h = History()
        try f.store.apply([h.put("c/a", bytes("a"))])
        #expect(try f.store.indexCatalog() == nil)
    }

    @Test(arguments: Backend.allCases)
    func theLatestCarriedCatalogIsKeptExactly(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        var first = h.put("c/a", bytes("a"))
        first.indexCatalog = bytes(#"{"nextId":2}"#)
        let plain = h.put("c/b", bytes("b"))
        try f.store.apply([first, plain])
        #expect(try f.store.indexCatalog() == bytes(#"{"nextId":2}"#))

        // A commit with index changes and a catalog only (how the engine declares an index).
        var declaration = h.index(adding: [entry([4, 1], "c/a")])
        declaration.indexCatalog = (0...255).map(UInt8.init)
        try f.store.apply([declaration])
        #expect(try f.store.indexCatalog() == (0...255).map(UInt8.init))
        #expect(try f.store.scanIndex(from: [4], to: [5], reverse: false, limit: 5).map(\.key) == [[4, 1]])

        // An empty catalog is a catalog, not "none"; and a catalog alone is a commit (a seq, logged empty).
        var empty = History(startingAfter: h.seq)
        let bare = CommitRecord(seq: empty.seq + 1, commitTime: Timestamp(micros: empty.clock), mutations: [], indexCatalog: [])
        empty.clock += 1
        try f.store.apply([bare])
        #expect(try f.store.indexCatalog() == [])
        #expect(try f.store.lastSeq() == bare.seq)
        let logged = try f.store.changes(after: 0, limit: 10)
        #expect(logged?.map(\.seq) == [1, 2, 3, 4])
        #expect(logged?.allSatisfy { $0.indexCatalog == nil && $0.indexChanges.isEmpty } == true)
        #expect(logged?.last?.mutations == [])
    }

    /// A snapshot reads the catalog as of its seq, whatever is committed after it.
    @Test(arguments: Backend.allCases)
    func aSnapshotReadsTheCatalogAtItsSeq(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        let none = try f.store.snapshot()
        #expect(try none.indexCatalog() == nil)
        none.close()
        var first = h.put("c/a", bytes("a"))
        first.indexCatalog = bytes("one")
        try f.store.apply([first])
        let snap = try f.store.snapshot()
        defer { snap.close() }
        var second = h.put("c/b", bytes("b"))
        second.indexCatalog = bytes("two")
        try f.store.apply([second, h.put("c/c", bytes("c"))])
        #expect(try snap.indexCatalog() == bytes("one"))
        #expect(try f.store.indexCatalog() == bytes("two"))
        let later = try f.store.snapshot()
        defer { later.close() }
        #expect(try later.indexCatalog() == bytes("two"))
    }

    @Test(arguments: Backend.allCases)
    func aRefusedGroupLeavesTheCatalog(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.finish() }
        var h = History()
        var first = h.put("c/a", bytes("a"))
        first.indexCatalog = bytes("one")
        try f.store.apply([first])
        var stale = commitAt(seq: 1, putting: "c/b")   // seq not above lastSeq: the whole group is refused
        stale.indexCatalog = bytes("two")
        var next = h.put("c/c", bytes("c"))
        next.indexCatalog = bytes("three")
        #expect(thrownError { () throws(HearthError) in try f.store.apply([next, stale]) }?.code == .internal)
        #expect(try f.store.indexCatalog() == bytes("one"))
    }

    @Test func theCatalogSurvivesReopenAndAFailedGroup() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.finish() }
        var h = History()
        var first = h.put("c/a", bytes("a"))
        first.indexCatalog = bytes("one")
        try f.store.apply([first])
        try f.reopen()
        #expect(try f.store.indexCatalog() == bytes("one"))

        // SQLite itself fails on a later document of the group (on a store without a commit log, whose
        // `apply` is SQLite's transaction): its catalog is rolled back with it.
        try f.refuseDocumentsNamedBoom()
        let store = try f.openSecond()
        defer { store.close() }
        var declaring = h.index(adding: [entry([4, 2], "c/a")])
        declaring.indexCatalog = bytes("two")
        let failing = h.put("c/boom", bytes("x"))
        #expect(thrownError { () throws(HearthError) in try store.apply([declaring, failing]) }?.code == .internal)
        #expect(try store.indexCatalog() == bytes("one"))
        #expect(try store.countIndex(from: [4], to: [5]) == 0)
    }
}

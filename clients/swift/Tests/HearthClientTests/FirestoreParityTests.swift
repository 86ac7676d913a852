import Foundation
import HearthTesting
import Testing
@testable import HearthClient

/// Firestore calls a port needs: `Timestamp()`, `source:` on reads, the shared instance, index management,
/// and the connection state a listener on an unreachable server reports.
@Suite struct FirestoreParityTests {
    @Test func timestampWithoutArgumentsIsNow() {
        let before = Date().timeIntervalSince1970
        let t = Timestamp()
        let after = Date().timeIntervalSince1970
        #expect(t.dateValue().timeIntervalSince1970 >= before - 1e-6 && t.dateValue().timeIntervalSince1970 <= after + 1e-6)
    }

    @Test func readsAcceptASourceAndTheServerIsTheOnlyOne() async throws {
        let env = try TestEnv()
        try await env.db.document("s/1").setData(["n": 1])
        #expect(try await env.db.document("s/1").getDocument(source: .server).get("n") as? Int == 1)
        #expect(try await env.db.document("s/1").getDocument(source: .default).exists)
        #expect(try await env.db.collection("s").getDocuments(source: .server).count == 1)
        await #expect(throws: HearthError(.unavailable, "Hearth keeps no local cache: read with source .server or .default")) {
            try await env.db.document("s/1").getDocument(source: .cache)
        }
        await #expect(throws: HearthError.self) { try await env.db.collection("s").getDocuments(source: .cache) }
        let snap: DocumentSnapshot? = try await withCallback { done in env.db.document("s/1").getDocument(source: .server, completion: done) }
        #expect(snap?.get("n") as? Int == 1)
        let cached: QuerySnapshot?? = try? await withCallback { done in env.db.collection("s").getDocuments(source: .cache, completion: done) }
        #expect(cached == nil, "a cache read fails")
    }

    @Test func indexesAreCreatedListedWaitedForAndDropped() async throws {
        let env = try TestEnv()
        let db = env.db
        for i in 0..<30 { try await db.document("calls/r\(i)").setData(["customerId": "c\(i % 3)", "duration": i]) }
        let query = db.collection("calls").whereField("customerId", isEqualTo: "c1").order(by: "duration", descending: true)
        await #expect(throws: HearthError.self) { try await query.getDocuments() }
        let created = try await db.createIndex(collection: "calls", fields: [.init("customerId"), .init("duration", .descending)])
        #expect(created.collection == "calls" && created.scope == .collection)
        #expect(created.fields == [HearthIndex.Field("customerId", .ascending), HearthIndex.Field("duration", .descending)])
        let ready = try await db.waitForIndex(id: created.id)
        #expect(ready.isReady)
        #expect(try await db.listIndexes().map(\.id).contains(created.id))
        let docs = try await query.getDocuments().documents
        #expect(docs.map { $0.get("duration") as? Int } == [28, 25, 22, 19, 16, 13, 10, 7, 4, 1])
        let again = try await db.createIndex(collection: "calls", fields: [.init("customerId"), .init("duration", .descending)])
        #expect(again.id == created.id && again.isReady, "declaring it again returns the index: \(again)")
        try await db.dropIndex(id: created.id)
        #expect(try await db.listIndexes().contains { $0.id == created.id } == false)
        await #expect(throws: HearthError.self) { try await db.waitForIndex(id: created.id, timeout: 1) }
    }

    /// A listener on an address nobody serves never calls back, but the instance reports `.disconnected`
    /// with the reason; pointed at a daemon, it connects, reports `.connected`, and the listener gets its
    /// first snapshot.
    @Test func aListenerOnAnUnreachableServerReportsTheConnectionState() async throws {
        let closed = try freePort()
        var settings = HearthSettings()
        settings.maxReconnectDelay = 0.2
        let db = Hearth(host: "127.0.0.1", port: closed, settings: settings)
        defer { db.terminate() }
        let states = Recorder<HearthConnectionState>()
        let watch = db.addConnectionStateListener { states.callback($0, nil) }
        let snaps = Recorder<QuerySnapshot>()
        let registration = db.collection("live").addSnapshotListener(snaps.callback)
        defer { registration.remove() }
        try await states.wait { $0.contains { if case .disconnected(let r) = $0 { return r.contains("\(closed)") || r.contains("refused") }; return false } }
        #expect(db.connectionState.isConnected == false)
        #expect(snaps.values.isEmpty && snaps.failures.isEmpty)

        let daemon = try DaemonProcess()
        db.setEndpoint(host: "127.0.0.1", port: daemon.port)
        try await snaps.wait(for: 1)
        try await states.wait { $0.last == .connected }
        #expect(db.connectionState == .connected)
        #expect(states.values.first == .disconnected(reason: "not connected yet"), "the current state comes first: \(states.values)")
        // Every state listener is called in one pass per change: the second one seeing the drop is the
        // barrier after which the removed first one would have seen it too.
        let later = Recorder<HearthConnectionState>()
        let second = db.addConnectionStateListener { later.callback($0, nil) }
        defer { second.remove() }
        try await later.wait { $0.last == .connected }
        watch.remove()
        daemon.kill9()
        try await later.wait { if case .disconnected = $0.last { return true }; return false }
        #expect(states.values.last == .connected, "a removed state listener gets nothing more")
    }

    @Test func theSharedInstanceIsConfiguredOnce() async throws {
        let daemon = try DaemonProcess()
        try Hearth.configure(host: "127.0.0.1", port: daemon.port)
        let db = Hearth.hearth()
        #expect(db === Hearth.hearth())
        #expect(try await db.ping() >= 0)
        do {
            try Hearth.configure(host: "127.0.0.1", port: 1)
            Issue.record("configure after first use succeeded")
        } catch let e as HearthError { #expect(e.code == .failedPrecondition) }
    }
}

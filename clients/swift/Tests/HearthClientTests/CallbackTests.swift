import Foundation
import Testing
import HearthClient

/// The completion-handler forms: results arrive on the settings' queue, and calls made one after another
/// are applied in that order.
@Suite struct CallbackTests {
    let env: TestEnv
    let queue = DispatchQueue(label: "test.callbacks")

    init() throws {
        env = try TestEnv(settings: HearthSettings(dispatchQueue: DispatchQueue(label: "test.callbacks.db")))
    }

    @Test func documentCallbacks() async throws {
        let ref = env.db.document("cb/doc")
        let _: Bool? = try await withCallback { done in ref.setData(["n": 1]) { error in done(error == nil, error) } }
        let snap: DocumentSnapshot? = try await withCallback { done in ref.getDocument(completion: done) }
        #expect(snap?.get("n") as? Int == 1)
        let _: Bool? = try await withCallback { done in ref.updateData(["n": 2]) { done(true, $0) } }
        let _: Bool? = try await withCallback { done in ref.setData(["m": 3], merge: true) { done(true, $0) } }
        let merged: DocumentSnapshot? = try await withCallback { done in ref.getDocument(completion: done) }
        #expect(merged?.get("n") as? Int == 2 && merged?.get("m") as? Int == 3)
        let _: Bool? = try await withCallback { done in ref.delete { done(true, $0) } }
        let gone: DocumentSnapshot? = try await withCallback { done in ref.getDocument(completion: done) }
        #expect(gone?.exists == false)
    }

    @Test func errorsReachTheCompletion() async throws {
        do {
            let _: Bool? = try await withCallback { done in env.db.document("cb/missing").updateData(["a": 1]) { done(true, $0) } }
            Issue.record("update of a missing document succeeded")
        } catch let e as HearthError {
            #expect(e.code == .notFound)
        }
        struct Opaque {}
        do {
            let _: Bool? = try await withCallback { done in env.db.document("cb/x").setData(["a": Opaque()]) { done(true, $0) } }
            Issue.record("an unencodable value was written")
        } catch let e as HearthError {
            #expect(e.code == .invalidArgument)
        }
    }

    /// Fire-and-forget writes issued in sequence apply in sequence; the last completion sees them all.
    @Test func sequentialCallbackWritesApplyInOrder() async throws {
        let ref = env.db.document("cb/order")
        // In an async context `setData(_:)` is the async form; naming `completion:` picks the callback one.
        for i in 0..<100 { ref.setData(["last": i], completion: nil) }
        let _: Bool? = try await withCallback { done in ref.updateData(["done": true]) { done(true, $0) } }
        let snap: DocumentSnapshot? = try await withCallback { done in ref.getDocument(completion: done) }
        #expect(snap?.get("last") as? Int == 99)
    }

    @Test func queryBatchAddAndTransactionCallbacks() async throws {
        let col = env.db.collection("cbq")
        let batch = env.db.batch()
        for i in 0..<5 { batch.setData(["i": i], forDocument: col.document("d\(i)")) }
        let _: Bool? = try await withCallback { done in batch.commit { done(true, $0) } }
        let snap: QuerySnapshot? = try await withCallback { done in col.whereField("i", isGreaterThan: 2).getDocuments(completion: done) }
        #expect(snap?.documents.map(\.documentID) == ["d3", "d4"])
        let count: AggregateQuerySnapshot? = try await withCallback { done in col.count.getAggregation(source: .server, completion: done) }
        #expect(count?.countValue == 5)

        let added = Box<DocumentReference>()
        let _: Bool? = try await withCallback { done in added.value = col.addDocument(data: ["i": 99]) { done(true, $0) } }
        #expect(try await added.value!.getDocument().get("i") as? Int == 99)

        let all: [DocumentSnapshot]? = try await withCallback { done in env.db.getAll([col.document("d0"), col.document("zz")], completion: done) }
        #expect(all?.map(\.exists) == [true, false])

        let counter = col.document("d0")
        let result: Int? = try await withCallback { done in
            env.db.runTransaction({ tx, errorPointer -> Any? in
                guard let snap = try? tx.getDocument(counter) else { return nil }
                let i = (snap.get("i") as? Int ?? 0) + 10
                tx.updateData(["i": i], forDocument: counter)
                return i
            }, completion: { value, error in done(value as? Int, error) })
        }
        #expect(result == 10)
    }
}

import Foundation
import Testing
import HearthClient

/// Optimistic transactions: preconditions on what was read, retries on conflict, errors not retried.
@Suite struct TransactionTests {
    let env: TestEnv
    init() throws { env = try TestEnv() }

    /// 20 concurrent tasks each increment a counter by read-modify-write in a transaction: the counter ends
    /// exactly at 20 and every transaction succeeded. (20 attempts each: how many a transaction needs depends
    /// on how the tasks interleave, and the default 5 can run out when the machine is loaded; exhausting
    /// attempts is tested in readsMustPrecedeWritesAndConflictsGiveUpAfterMaxAttempts.)
    @Test func concurrentIncrementsEndExact() async throws {
        let counter = env.db.document("counters/c")
        try await counter.setData(["n": 0])
        let results = await withTaskGroup(of: Result<Int, Error>.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do {
                        let v = try await env.db.runTransaction(options: TransactionOptions(maxAttempts: 20)) { tx in
                            let snap = try await tx.getDocument(counter)
                            let n = (snap.get("n") as? Int ?? 0) + 1
                            tx.updateData(["n": n], forDocument: counter)
                            return n
                        }
                        return .success(v)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let failures = results.compactMap { if case .failure(let e) = $0 { return e } else { return nil } }
        #expect(failures.isEmpty, "\(failures)")
        let values = results.compactMap { try? $0.get() }
        #expect(Set(values) == Set(1...20), "each transaction saw a distinct committed value")
        #expect(try await counter.getDocument().get("n") as? Int == 20)
    }

    /// Twenty independent clients (one connection each) contending: still exact.
    @Test func concurrentIncrementsFromSeparateConnections() async throws {
        let counter = env.db.document("counters/multi")
        try await counter.setData(["n": 0])
        let port = env.daemon.port
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        let db = Hearth(host: "127.0.0.1", port: port)
                        defer { db.terminate() }
                        let ref = db.document("counters/multi")
                        _ = try await db.runTransaction(options: TransactionOptions(maxAttempts: 25)) { tx in
                            let n = try await tx.getDocument(ref).get("n") as? Int ?? 0
                            tx.setData(["n": n + 1], forDocument: ref)
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            Issue.record("\(error); daemon log:\n\(env.daemon.log.suffix(2000))")
        }
        #expect(try await counter.getDocument().get("n") as? Int == 20)
    }

    @Test func readOfAMissingDocumentIsAPrecondition() async throws {
        let ref = env.db.document("singletons/s")
        let attempts = Box<Int>()
        attempts.value = 0
        let created = try await env.db.runTransaction { tx -> Bool in
            attempts.value! += 1
            let snap = try await tx.getDocument(ref)
            if attempts.value == 1 {
                // A concurrent writer creates the document after our read: the commit must not overwrite it.
                try await env.db.document("singletons/s").setData(["owner": "other"])
            }
            if snap.exists { return false }
            tx.setData(["owner": "me"], forDocument: ref)
            return true
        }
        #expect(created == false)
        #expect(attempts.value == 2)
        #expect(try await ref.getDocument().get("owner") as? String == "other")
    }

    @Test func readOnlyDocumentsAreVerified() async throws {
        let source = env.db.document("t/source"), target = env.db.document("t/target")
        try await source.setData(["v": 1])
        let attempts = Box<Int>()
        attempts.value = 0
        try await env.db.runTransaction { tx in
            attempts.value! += 1
            let v = try await tx.getDocument(source).get("v") as? Int ?? 0
            if attempts.value == 1 { try await source.setData(["v": 2]) }
            tx.setData(["copied": v], forDocument: target)
        }
        #expect(attempts.value == 2)
        #expect(try await target.getDocument().get("copied") as? Int == 2)
    }

    @Test func appErrorsAreNotRetried() async throws {
        struct Refused: Error {}
        let attempts = Box<Int>()
        attempts.value = 0
        await #expect(throws: Refused.self) {
            try await env.db.runTransaction { _ in
                attempts.value! += 1
                throw Refused()
            }
        }
        #expect(attempts.value == 1)

        // The app's own update of a missing (unread) document fails with NOT_FOUND, once.
        attempts.value = 0
        let code = await hearthCode {
            try await env.db.runTransaction { tx in
                attempts.value! += 1
                tx.updateData(["a": 1], forDocument: env.db.document("t/missing"))
            }
        }
        #expect(code == .notFound)
        #expect(attempts.value == 1)
    }

    @Test func readsMustPrecedeWritesAndConflictsGiveUpAfterMaxAttempts() async throws {
        let ref = env.db.document("t/r")
        let code = await hearthCode {
            try await env.db.runTransaction { tx in
                tx.setData(["a": 1], forDocument: ref)
                _ = try await tx.getDocument(ref)
            }
        }
        #expect(code == .invalidArgument)

        let attempts = Box<Int>()
        attempts.value = 0
        let conflict = await hearthCode {
            try await env.db.runTransaction(options: TransactionOptions(maxAttempts: 3)) { tx in
                attempts.value! += 1
                _ = try await tx.getDocument(ref)
                try await ref.setData(["bump": attempts.value!])   // always invalidates the read
                tx.setData(["mine": true], forDocument: ref)
            }
        }
        #expect(conflict == .failedPrecondition)
        #expect(attempts.value == 3)
    }

    /// Firestore's block form with an NSErrorPointer, async and with a completion handler.
    @Test func errorPointerBlockForms() async throws {
        let ref = env.db.document("t/block")
        try await ref.setData(["n": 41])
        let result = try await env.db.runTransaction { tx, errorPointer -> Any? in
            let snap: DocumentSnapshot
            do {
                snap = try tx.getDocument(ref)
            } catch let fetchError as NSError {
                errorPointer?.pointee = fetchError
                return nil
            }
            let n = (snap.get("n") as? Int ?? 0) + 1
            tx.updateData(["n": n], forDocument: ref)
            return n
        }
        #expect(result as? Int == 42)

        let failed: Int? = try? await withCallback { (done: @escaping @Sendable (Int?, Error?) -> Void) in
            env.db.runTransaction({ _, errorPointer -> Any? in
                errorPointer?.pointee = NSError(domain: "app", code: 7)
                return nil
            }, completion: { value, error in done(value as? Int, error) })
        }
        #expect(failed == nil)
        #expect(try await ref.getDocument().get("n") as? Int == 42)
    }
}

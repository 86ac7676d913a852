import Foundation
import Testing
@testable import HearthClient

/// Waiting for listener callbacks when the waiting task itself is starved: under a fully loaded parallel
/// suite a test task can stay unscheduled for seconds (the cooperative pool's few threads sit in blocking
/// calls), long after the callback it waits for has arrived on the library's own queues. Reaching the
/// deadline late must not turn a callback that has arrived into "never received".
@Suite struct StarvedWaiterTests {
    /// The refusal of a listen arrives while the waiter is starved past its deadline; the waiter still sees it.
    @Test func aRefusedListenIsSeenByAWaiterStarvedPastItsDeadline() async throws {
        guard #available(macOS 15.0, *) else { return }
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: ListenerProtocolTests.settings())
        defer { db.terminate() }
        let rec = Recorder<QuerySnapshot>()
        let reg = db.collection("call_records").whereField("customerId", isEqualTo: "c1")
            .order(by: "callDate", descending: true).addSnapshotListener(rec.callback)
        defer { reg.remove() }

        let executor = StallableExecutor()
        let started = Date()
        let waiter = Task(executorPreference: executor) { try await rec.waitForError(timeout: 0.05) }
        await executor.stall()   // the waiter has looked once (nothing yet) and is asleep; it now cannot run

        let c = try await server.accept()
        let listen = try await c.expect("listen")
        try c.reply(listen, #""ok":false,"error":{"code":"FAILED_PRECONDITION","message":"the query requires an index"}"#)
        while rec.failures.isEmpty { try await Task.sleep(nanoseconds: 1_000_000) }   // delivered, promptly
        while Date().timeIntervalSince(started) < 0.2 { try await Task.sleep(nanoseconds: 10_000_000) }
        executor.release()       // the waiter runs again, past its deadline, with the error recorded

        let error = try await waiter.value
        #expect((error as? HearthError)?.code == .failedPrecondition)
    }
}

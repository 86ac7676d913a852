import Foundation
import HearthModel
import Testing
@testable import HearthRules

/// Micro-benchmark of evaluation, run on demand (it prints timings and checks only the decisions):
/// `HEARTH_RULES_BENCH=1 swift test -c release -Xswiftc -enable-testing --filter RulesBenchmark`
@Suite("RulesBenchmark", .enabled(if: ProcessInfo.processInfo.environment["HEARTH_RULES_BENCH"] != nil))
struct RulesBenchmark {
    static let rules = compileRules("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /users/{userId} {
              allow read: if request.auth != null && request.auth.uid == userId;
            }
            match /departments/{dept}/calls/{call} {
              allow read: if get(/databases/$(database)/documents/departments/$(dept)/members/$(request.auth.uid)).data.active == true;
            }
            match /posts/{post} {
              allow list: if request.auth != null && resource.data.owner == request.auth.uid && request.query.limit <= 50;
            }
          }
        }
        """)

    static func measure(_ name: String, iterations: Int = 200_000, _ body: () -> Bool) {
        for _ in 0..<1000 { _ = body() }  // warm up
        var allowed = 0
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for _ in 0..<iterations where body() { allowed += 1 }
        }
        let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        print("rules bench: \(name): \(String(format: "%.0f", ns / Double(iterations))) ns/evaluation (\(iterations) iterations)")
        #expect(allowed == iterations, "\(name) must allow every time")
    }

    @Test("evaluation cost per request")
    func run() {
        let reader = FakeReader(before: ["departments/d1/members/alice": ["active": true]])
        let get = request(.get, "users/alice", uid: "alice", resource: ["name": "A"])
        Self.measure("get users/{userId}, request.auth.uid == userId") { Self.rules.evaluate(get, reader: reader).allowed }
        let withGet = request(.get, "departments/d1/calls/c1", uid: "alice", resource: ["n": 1])
        Self.measure("get with a get() rule") { Self.rules.evaluate(withGet, reader: reader).allowed }
        let list = listRequest(Query.collection(col("posts")).filtered(eq("owner", "alice")).limited(20), uid: "alice")
        Self.measure("list posts where owner == uid limit 20", iterations: 50_000) { Self.rules.evaluate(list, reader: reader).allowed }
        let path = doc("users/alice")
        Self.measure("peer: DocumentPath hash + equality (a dictionary lookup's work)") { path.hashValue != 0 && path == get.path! }
    }
}

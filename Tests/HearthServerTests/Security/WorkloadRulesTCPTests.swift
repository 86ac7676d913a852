import Foundation
import HearthTesting
import Testing

/// The rules files of the three workload guides (docs/guides/rules/), run against the real daemon: the
/// guides' own flows are allowed, and one user cannot read or write another's data.
@Suite struct WorkloadRulesTCPTests {
    static func rules(_ name: String) throws -> String {
        try String(contentsOf: DocsConsistencyTests.repoRoot.appendingPathComponent("docs/guides/rules/\(name).rules"), encoding: .utf8)
    }

    static func denied(_ r: [String: Any]) -> Bool { r.errorCode == "PERMISSION_DENIED" }

    static func data(_ r: [String: Any]) -> [String: Any]? { (r["doc"] as? [String: Any])?["data"] as? [String: Any] }

    // MARK: Departments

    static func createDepartment(_ c: WireClient, _ id: String, creator: String) throws -> [String: Any] {
        try c.request(#"{"op":"commit","writes":[{"op":"create","path":"departments/\#(id)","data":{"departmentId":"\#(id)","departmentName":"R&D","name":"R&D","description":"Research","creatorId":"\#(creator)","creatorName":"Ada","createdAt":{"$serverTimestamp":true},"memberCount":1}},{"op":"create","path":"department_memberships/\#(creator)_\#(id)","data":{"userId":"\#(creator)","departmentId":"\#(id)","departmentName":"R&D","joinedAt":{"$serverTimestamp":true}}}]}"#)
    }

    static func join(_ c: WireClient, _ uid: String, _ id: String, by: Int = 1) throws -> [String: Any] {
        try c.request(#"{"op":"commit","writes":[{"op":"create","path":"department_memberships/\#(uid)_\#(id)","data":{"userId":"\#(uid)","departmentId":"\#(id)","departmentName":"R&D","joinedAt":{"$serverTimestamp":true}}},{"op":"update","path":"departments/\#(id)","data":{"memberCount":{"$increment":\#(by)}}}]}"#)
    }

    @Test func departmentsAreForTheirMembers() throws {
        let s = try SecureDaemon(rules: try Self.rules("departments"))
        let ada = try s.client("u1"), bea = try s.client("u2"), eve = try s.client("u3")
        #expect(try Self.createDepartment(ada, "D1", creator: "u1").isOK)
        // Creating for someone else, or without the creator's membership, is refused.
        #expect(Self.denied(try Self.createDepartment(eve, "D2", creator: "u1")))
        #expect(Self.denied(try eve.request(#"{"op":"create","path":"departments/D3","data":{"departmentId":"D3","creatorId":"u3","memberCount":1}}"#)))
        // Members only.
        #expect(try ada.request(#"{"op":"get","path":"departments/D1"}"#).isOK)
        #expect(Self.denied(try bea.request(#"{"op":"get","path":"departments/D1"}"#)))
        // Joining: the membership only with memberCount + 1, never + 2, never without it.
        #expect(Self.denied(try Self.join(bea, "u2", "D1", by: 2)))
        #expect(Self.denied(try bea.request(#"{"op":"create","path":"department_memberships/u2_D1","data":{"userId":"u2","departmentId":"D1"}}"#)))
        #expect(Self.denied(try Self.join(bea, "u3", "D1")), "a membership for someone else")
        #expect(try Self.join(bea, "u2", "D1").isOK)
        #expect(Self.data(try bea.request(#"{"op":"get","path":"departments/D1"}"#))?["memberCount"] as? Int == 2)
        // Memberships: one's own, and a query must ask for them.
        let mine = try bea.request(#"{"op":"query","collection":"department_memberships","where":[["userId","==","u2"]]}"#)
        #expect((mine["docs"] as? [Any])?.count == 1, "\(mine)")
        #expect(Self.denied(try bea.request(#"{"op":"query","collection":"department_memberships","where":[["userId","==","u1"]]}"#)))
        #expect(Self.denied(try bea.request(#"{"op":"query","collection":"department_memberships"}"#)))
        // Only the creator renames.
        #expect(Self.denied(try bea.request(#"{"op":"update","path":"departments/D1","data":{"departmentName":"Mine"}}"#)))
        #expect(try ada.request(#"{"op":"update","path":"departments/D1","data":{"departmentName":"R&D 2","name":"R&D 2"}}"#).isOK)
        // A member's listener on the department ends when they leave.
        let l = try bea.request(#"{"op":"listen","path":"departments/D1"}"#)
        let sub = l["sub"] as! String
        _ = try SecureDaemon.event(bea, sub: sub)
        #expect(Self.denied(try bea.request(#"{"op":"commit","writes":[{"op":"delete","path":"department_memberships/u2_D1"}]}"#)), "leaving without the decrement")
        let leave = #"{"op":"commit","writes":[{"op":"delete","path":"department_memberships/u2_D1"},{"op":"update","path":"departments/D1","data":{"memberCount":{"$increment":-1}}}]}"#
        // The listener's end comes before the leave's answer (as a snapshot of one's own write does).
        try bea.send(leave)
        let end = try bea.readObject()
        #expect(end["sub"] as? String == sub && (end["error"] as? [String: Any])?["code"] as? String == "PERMISSION_DENIED", "\(end)")
        #expect(try bea.readObject().isOK)
        #expect(Self.data(try ada.request(#"{"op":"get","path":"departments/D1"}"#))?["memberCount"] as? Int == 1)
    }

    // MARK: Call records

    @Test func callRecordsAreForTheCustomersAgents() throws {
        let s = try SecureDaemon(rules: try Self.rules("call-records"))
        let admin = try s.admin()
        #expect(try admin.request(#"{"op":"commit","writes":[{"op":"set","path":"customers/c1","data":{"fullName":"Kim","agents":["agentA"]}},{"op":"set","path":"customers/c2","data":{"fullName":"Lee","agents":["agentB"]}}]}"#).isOK)
        #expect(try admin.request(#"{"op":"index","action":"create","collection":"call_records","fields":[["customerId","asc"],["callDate","desc"]]}"#).isOK)
        let a = try s.client("agentA"), b = try s.client("agentB")
        let call = #"{"op":"add","collection":"call_records","data":{"customerId":"c1","title":"Follow-up","description":"","callDate":{"$timestamp":"2026-11-30T10:00:00Z"}}}"#
        #expect(try a.request(call).isOK)
        #expect(Self.denied(try b.request(call)), "agent B adds a record to A's customer")
        #expect(Self.denied(try a.request(#"{"op":"add","collection":"call_records","data":{"customerId":"c1","title":"x","callDate":"yesterday"}}"#)), "callDate must be a timestamp")
        let listing = #""collection":"call_records","where":[["customerId","==","c1"]],"orderBy":[["callDate","desc"]],"limit":20"#
        let r = try a.request(#"{"op":"query",\#(listing)}"#)
        #expect((r["docs"] as? [Any])?.count == 1, "\(r)")
        #expect(Self.denied(try b.request(#"{"op":"query",\#(listing)}"#)))
        #expect(Self.denied(try a.request(#"{"op":"query","collection":"call_records","orderBy":[["callDate","desc"]],"limit":20}"#)), "no customer named")
        #expect(try a.request(#"{"op":"get","path":"customers/c1"}"#).isOK)
        #expect(Self.denied(try a.request(#"{"op":"get","path":"customers/c2"}"#)))
        #expect(Self.denied(try a.request(#"{"op":"set","path":"customers/c1","data":{"agents":["agentA","agentB"]},"merge":true}"#)), "only the back office assigns agents")
        // Unassigned: the live listing ends.
        let l = try a.request(#"{"op":"listen","query":{\#(listing)}}"#)
        #expect(l.isOK, "\(l)")
        let sub = l["sub"] as! String
        _ = try SecureDaemon.event(a, sub: sub)
        #expect(try admin.request(#"{"op":"set","path":"customers/c1","data":{"agents":["agentB"]},"merge":true}"#).isOK)
        let end = try SecureDaemon.event(a, sub: sub)
        #expect((end["error"] as? [String: Any])?["code"] as? String == "PERMISSION_DENIED", "\(end)")
        #expect(try b.request(#"{"op":"query",\#(listing)}"#).isOK)
    }

    // MARK: Timelines

    @Test func feedsPostsAndFanOut() throws {
        let s = try SecureDaemon(rules: try Self.rules("timelines"))
        let conan = try s.client("conan"), dora = try s.client("dora"), eve = try s.client("eve")
        // dora follows conan: the relation, conan's followerCount + 1, no backfill yet.
        #expect(try dora.request(#"{"op":"commit","writes":[{"op":"set","path":"users/conan","data":{"followerCount":1},"merge":true},{"op":"set","path":"users/conan/followers/dora","data":{"since":{"$serverTimestamp":true}}},{"op":"set","path":"users/dora/following/conan","data":{"since":{"$serverTimestamp":true}}}]}"#).isOK)
        #expect(Self.denied(try eve.request(#"{"op":"set","path":"users/conan","data":{"followerCount":100},"merge":true}"#)), "a count without a relation")
        // conan posts: the post, his own entry and dora's, in one commit.
        let post = #"{"op":"commit","writes":[{"op":"set","path":"users/conan","data":{"postCount":1},"merge":true},{"op":"set","path":"posts/p1","data":{"ownerUid":"conan","caption":"hi","timestamp":{"$serverTimestamp":true}}},{"op":"set","path":"users/conan/user-feed/p1","data":{"ownerUid":"conan","timestamp":{"$serverTimestamp":true}}},{"op":"set","path":"users/dora/user-feed/p1","data":{"ownerUid":"conan","timestamp":{"$serverTimestamp":true}}}]}"#
        #expect(try conan.request(post).isOK)
        // Posts only by their author; feed entries only with the post, only to followers.
        #expect(Self.denied(try eve.request(#"{"op":"set","path":"posts/p2","data":{"ownerUid":"conan","caption":"fake"}}"#)))
        #expect(Self.denied(try eve.request(#"{"op":"set","path":"users/dora/user-feed/p9","data":{"ownerUid":"eve"}}"#)), "a feed entry without a post")
        #expect(Self.denied(try eve.request(#"{"op":"commit","writes":[{"op":"set","path":"posts/p3","data":{"ownerUid":"eve"}},{"op":"set","path":"users/dora/user-feed/p3","data":{"ownerUid":"eve"}}]}"#)), "dora does not follow eve")
        #expect(Self.denied(try conan.request(#"{"op":"set","path":"users/dora/user-feed/p1","data":{"ownerUid":"conan","boost":true}}"#)), "the post exists already: not a fan-out")
        // A feed is read by its owner only.
        let feed = #""collection":"users/dora/user-feed","orderBy":[["timestamp","desc"]],"limit":20"#
        let r = try dora.request(#"{"op":"query",\#(feed)}"#)
        #expect((r["docs"] as? [Any])?.count == 1, "\(r)")
        #expect(Self.denied(try eve.request(#"{"op":"query",\#(feed)}"#)))
        #expect(Self.denied(try conan.request(#"{"op":"listen","query":{\#(feed)}}"#)))
        // The author lists his followers to fan out; nobody else does.
        #expect(try conan.request(#"{"op":"query","collection":"users/conan/followers"}"#).isOK)
        #expect(Self.denied(try eve.request(#"{"op":"query","collection":"users/conan/followers"}"#)))
        // Backfill on follow: eve follows conan and copies p1 into her own feed.
        #expect(try eve.request(#"{"op":"commit","writes":[{"op":"set","path":"users/conan","data":{"followerCount":2},"merge":true},{"op":"set","path":"users/conan/followers/eve","data":{"since":{"$serverTimestamp":true}}},{"op":"set","path":"users/eve/following/conan","data":{"since":{"$serverTimestamp":true}}},{"op":"set","path":"users/eve/user-feed/p1","data":{"ownerUid":"conan","timestamp":{"$timestamp":"2026-01-01T00:00:00Z"}}}]}"#).isOK)
        // The backfill query names its author.
        #expect(try eve.request(#"{"op":"query","collection":"posts","where":[["ownerUid","==","conan"]]}"#).isOK)
        #expect(Self.denied(try eve.request(#"{"op":"query","collection":"posts"}"#)))
    }
}

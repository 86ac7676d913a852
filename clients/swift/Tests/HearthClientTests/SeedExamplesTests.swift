import Foundation
import HearthTesting
import Testing
import HearthClient

/// Runs the ported seed flows in `SeedExamples.swift` against a real daemon (a fresh one per test).
@Suite struct SeedExamplesTests {
    // MARK: 1. Departments and memberships

    @Test func createDepartmentWritesDepartmentAndCreatorMembershipAtomically() async throws {
        let env = try TestEnv()
        let db = env.db
        let id = try await createDepartment(db: db, name: "R&D", description: "Research", creatorId: "u0", creatorName: "Ada")

        let raw = try #require(try await db.collection("departments").document(id).getDocument().data())
        #expect(raw["departmentId"] as? String == id)
        #expect(raw["departmentName"] as? String == "R&D")
        #expect(raw["name"] as? String == "R&D")
        #expect(raw["memberCount"] as? Int == 1)
        #expect(raw["createdAt"] is Timestamp)

        let department = try await fetchDepartment(db: db, id: id)
        #expect(department.id == id && department.displayName == "R&D")

        let memberships = try await fetchUserMemberships(db: db, userId: "u0")
        #expect(memberships.count == 1)
        let m = try #require(memberships.first)
        #expect(m.id == "u0_\(id)" && m.departmentId == id && m.departmentName == "R&D" && m.userId == "u0")
        #expect(m.joinedAt == department.createdAt, "both documents written by one commit")

        // Documents from before the rename (only `name`) still decode and display.
        try await db.collection("departments").document("legacy").setData([
            "name": "Ops", "description": "", "creatorId": "u9", "creatorName": "Old", "memberCount": 3,
        ])
        let legacy = try await fetchDepartment(db: db, id: "legacy")
        #expect(legacy.displayName == "Ops" && legacy.departmentName == nil && legacy.createdAt == nil)
    }

    @Test func joiningTwiceIsRefusedAndTheCountStaysExact() async throws {
        let env = try TestEnv()
        let db = env.db
        let id = try await createDepartment(db: db, name: "Sales", description: "", creatorId: "u0", creatorName: "Ada")
        let department = try await fetchDepartment(db: db, id: id)

        try await joinDepartment(db: db, department, userId: "u1")
        #expect(try await fetchDepartment(db: db, id: id).memberCount == 2)
        await #expect(throws: DepartmentError.alreadyJoined) { try await joinDepartment(db: db, department, userId: "u1") }
        await #expect(throws: DepartmentError.alreadyJoined) { try await joinDepartment(db: db, department, userId: "u0") }
        #expect(try await fetchDepartment(db: db, id: id).memberCount == 2)
        #expect(try await fetchUserMemberships(db: db, userId: "u1").map(\.departmentName) == ["Sales"])

        // Joining a department that does not exist fails as a whole: no orphan membership.
        var ghost = department
        ghost.id = "missing"
        await #expect(throws: HearthError.self) { try await joinDepartment(db: db, ghost, userId: "u2") }
        #expect(try await fetchUserMemberships(db: db, userId: "u2").isEmpty)
    }

    @Test func twentyConcurrentJoinsEndAtExactlyTwentyOne() async throws {
        let env = try TestEnv()
        let db = env.db
        let id = try await createDepartment(db: db, name: "Support", description: "", creatorId: "creator", creatorName: "C")
        let department = try await fetchDepartment(db: db, id: id)

        // Each user joins twice at once: exactly one of the two attempts wins.
        let refused = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 1...20 {
                for _ in 0..<2 {
                    group.addTask {
                        do { try await joinDepartment(db: db, department, userId: "user\(i)"); return 0 }
                        catch DepartmentError.alreadyJoined { return 1 }
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(refused == 20)
        #expect(try await fetchDepartment(db: db, id: id).memberCount == 21)
        let members = try await db.collection("department_memberships").whereField("departmentId", isEqualTo: id).getDocuments()
        #expect(members.count == 21)
    }

    @Test func hundredConcurrentJoinsAndLeavesWithDoubleTapsStayExact() async throws {
        let env = try TestEnv()
        let db = env.db
        let id = try await createDepartment(db: db, name: "Ops", description: "", creatorId: "creator", creatorName: "C")
        let department = try await fetchDepartment(db: db, id: id)
        let refusedJoins = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 1...100 {
                for _ in 0..<2 {
                    group.addTask {
                        do { try await joinDepartment(db: db, department, userId: "u\(i)"); return 0 }
                        catch DepartmentError.alreadyJoined { return 1 }
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(refusedJoins == 100)
        #expect(try await fetchDepartment(db: db, id: id).memberCount == 101)
        let refusedLeaves = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 1...100 {
                for _ in 0..<2 {
                    group.addTask {
                        do { try await leaveDepartment(db: db, departmentId: id, userId: "u\(i)"); return 0 }
                        catch DepartmentError.notMember { return 1 }
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(refusedLeaves == 100)
        #expect(try await fetchDepartment(db: db, id: id).memberCount == 1)
        let members = try await db.collection("department_memberships").whereField("departmentId", isEqualTo: id).getDocuments()
        #expect(members.count == 1)
    }

    // MARK: 2. Call records

    @Test(.enabled(if: ServerSupport.listen, "hearthd does not implement the listen op yet"))
    func callRecordListenerShowsNewestFirstAndNewRecordsOnTop() async throws {
        let env = try TestEnv()
        let db = env.db
        try env.createIndex(collection: "call_records", fields: #"[["customerId","asc"],["callDate","desc"]]"#)

        let base = Date(timeIntervalSince1970: 1_700_000_000)
        for (i, title) in ["first", "second", "third"].enumerated() {
            try await addCallRecord(db: db, CallRecord(customerId: "c1", title: title, description: "",
                                                       callDate: base.addingTimeInterval(Double(i) * 60)))
        }
        try await addCallRecord(db: db, CallRecord(customerId: "c2", title: "other customer", description: "", callDate: base))

        let updates = Recorder<[CallRecord]>()
        let registration = listenToCallRecords(db: db, customerId: "c1") { result in
            switch result {
            case .success(let records): updates.callback(records, nil)
            case .failure(let error): updates.callback(nil, error)
            }
        }
        defer { registration.remove() }

        let initial = try await updates.wait(for: 1)[0]
        #expect(initial.map(\.title) == ["third", "second", "first"])
        #expect(initial.allSatisfy { $0.customerId == "c1" && $0.id != nil })
        #expect(initial[0].callDate == base.addingTimeInterval(120))

        let newId = try await addCallRecord(db: db, CallRecord(customerId: "c1", title: "follow-up", description: "call back",
                                                               callDate: base.addingTimeInterval(3600)))
        try await updates.wait { $0.last?.first?.id == newId }
        let latest = try #require(updates.values.last)
        #expect(latest.map(\.title) == ["follow-up", "third", "second", "first"])
        #expect(updates.failures.isEmpty)
    }

    @Test func callRecordQueryLimitsToTwentyNewest() async throws {
        let env = try TestEnv()
        let db = env.db
        try env.createIndex(collection: "call_records", fields: #"[["customerId","asc"],["callDate","desc"]]"#)
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        let batch = db.batch()
        for i in 0..<25 {
            try batch.setData(from: CallRecord(customerId: "c1", title: "call \(i)", description: "", callDate: base.addingTimeInterval(Double(i))),
                              forDocument: db.collection("call_records").document())
        }
        try await batch.commit()
        let records = try await db.collection("call_records")
            .whereField("customerId", isEqualTo: "c1").order(by: "callDate", descending: true).limit(to: 20)
            .getDocuments().documents.map { try $0.data(as: CallRecord.self) }
        #expect(records.map(\.title) == (5..<25).reversed().map { "call \($0)" })
    }

    // MARK: 3. Follower timelines

    @Test func feedPagesNewestFirstAndLoadsFullPosts() async throws {
        let env = try TestEnv()
        let db = env.db
        let base = Date(timeIntervalSince1970: 1_700_000_000)
        // Two authors "conan" and "nobita" followed by "doraemon"; "stranger" is followed by nobody.
        var expected: [String] = []   // post IDs in doraemon's feed, oldest first
        for i in 0..<15 {
            let author = i % 2 == 0 ? "conan" : "nobita"
            let id = try await publishPost(db: db, caption: "post \(i)", ownerUid: author, ownerUsername: author.capitalized,
                                           followerUids: ["doraemon"], at: base.addingTimeInterval(Double(i) * 10))
            expected.append(id)
        }
        try await publishPost(db: db, caption: "unseen", ownerUid: "stranger", ownerUsername: "S", followerUids: [],
                              at: base.addingTimeInterval(1000))

        let first = try await fetchFeedPage(db: db, uid: "doraemon")
        #expect(first.posts.map(\.caption) == (5..<15).reversed().map { "post \($0)" })
        #expect(first.posts.map(\.id) == Array(expected[5...].reversed()))
        #expect(first.posts[0].ownerUid == "conan" && first.posts[0].ownerUsername == "Conan")
        #expect(first.posts.allSatisfy { $0.likes == 0 })
        let cursor = try #require(first.cursor)

        let second = try await fetchFeedPage(db: db, uid: "doraemon", after: cursor)
        #expect(second.posts.map(\.caption) == (0..<5).reversed().map { "post \($0)" })
        #expect(second.cursor == nil)

        // A deleted post is skipped, not an error; an author sees their own posts.
        try await db.collection("posts").document(expected[14]).delete()
        #expect(try await fetchFeedPage(db: db, uid: "doraemon").posts.first?.caption == "post 13")
        #expect(try await fetchFeedPage(db: db, uid: "nobita").posts.map(\.caption) == ["post 13", "post 11", "post 9", "post 7", "post 5", "post 3", "post 1"])
        #expect(try await fetchFeedPage(db: db, uid: "nobody").posts.isEmpty)
    }
}

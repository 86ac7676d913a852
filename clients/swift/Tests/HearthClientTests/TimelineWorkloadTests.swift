import Foundation
import HearthTesting
import Testing
import HearthClient

// Workload: follower timelines (seed 003), against a real daemon. Each user has a feed of entries
// `users/{uid}/user-feed/{postId}` ({ownerUid, timestamp}); following a user backfills their recent posts,
// unfollowing removes their entries, posting fans out to every follower. Each of the three is ONE atomic
// batch. See docs/guides/timelines.md.

enum Timeline {
    struct Post: Codable, Identifiable, Equatable {
        @DocumentID var id: String?
        var ownerUid: String
        var caption: String
        var timestamp: Timestamp
    }

    struct FeedEntry: Codable, Identifiable, Equatable {
        @DocumentID var id: String?
        var ownerUid: String
        var timestamp: Timestamp
    }

    /// How many of a user's posts a new follower gets in their feed.
    static let backfill = 20
    /// `posts where ownerUid == X order by timestamp desc` (the backfill read).
    static let postsIndex = #"[["ownerUid","asc"],["timestamp","desc"]]"#

    static func user(_ db: Hearth, _ uid: String) -> DocumentReference { db.collection("users").document(uid) }
    static func feed(_ db: Hearth, _ uid: String) -> CollectionReference { user(db, uid).collection("user-feed") }

    /// `follower` follows `followee`: reads the followee's recent posts, then one batch writes both
    /// relation documents and the feed entries.
    static func follow(_ db: Hearth, _ follower: String, _ followee: String) async throws {
        precondition(follower != followee)
        let recent = try await db.collection("posts")
            .whereField("ownerUid", isEqualTo: followee)
            .order(by: "timestamp", descending: true)
            .limit(to: backfill)
            .getDocuments().documents
        let batch = db.batch()
        batch.setData(["since": FieldValue.serverTimestamp()], forDocument: user(db, follower).collection("following").document(followee))
        batch.setData(["since": FieldValue.serverTimestamp()], forDocument: user(db, followee).collection("followers").document(follower))
        for post in recent {
            batch.setData(["ownerUid": followee, "timestamp": post.get("timestamp")!],
                          forDocument: feed(db, follower).document(post.documentID))
        }
        try await batch.commit()
    }

    /// `follower` stops following `followee`: one batch deletes both relation documents and every entry of
    /// the followee in the follower's feed (backfilled or fanned out, found by `ownerUid`).
    static func unfollow(_ db: Hearth, _ follower: String, _ followee: String) async throws {
        precondition(follower != followee)
        let entries = try await feed(db, follower).whereField("ownerUid", isEqualTo: followee).getDocuments().documents
        let batch = db.batch()
        batch.deleteDocument(user(db, follower).collection("following").document(followee))
        batch.deleteDocument(user(db, followee).collection("followers").document(follower))
        for entry in entries { batch.deleteDocument(entry.reference) }
        try await batch.commit()
    }

    /// Publishes a post: one batch writes the post, the author's own feed entry and one entry per follower.
    @discardableResult
    static func post(_ db: Hearth, _ ownerUid: String, caption: String, at timestamp: Timestamp) async throws -> String {
        let followers = try await user(db, ownerUid).collection("followers").getDocuments().documents.map(\.documentID)
        let postRef = db.collection("posts").document()
        let batch = db.batch()
        batch.setData(["ownerUid": ownerUid, "caption": caption, "timestamp": timestamp], forDocument: postRef)
        for uid in [ownerUid] + followers {
            batch.setData(["ownerUid": ownerUid, "timestamp": timestamp], forDocument: feed(db, uid).document(postRef.documentID))
        }
        try await batch.commit()
        return postRef.documentID
    }

    /// The newest `limit` feed entries of `uid`, newest first.
    static func feedQuery(_ db: Hearth, _ uid: String, limit: Int = 20) -> Query {
        feed(db, uid).order(by: "timestamp", descending: true).limit(to: limit)
    }

    /// The full posts of a page of feed entries, in the page's order, in one round trip (`getAll`).
    /// Entries whose post was deleted are skipped.
    static func posts(_ db: Hearth, for entries: [DocumentSnapshot]) async throws -> [Post] {
        let snaps = try await db.getAll(entries.map { db.collection("posts").document($0.documentID) })
        return try snaps.filter(\.exists).map { try $0.data(as: Post.self) }
    }
}

@Suite struct TimelineWorkloadTests {
    let base = Date(timeIntervalSince1970: 1_767_225_600)

    /// A deterministic generator (SplitMix64) so a failure can be replayed from its seed.
    struct Rng {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(n))
        }
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func randomizedFollowsAndPostsKeepEveryFeedExact(seed: UInt64) async throws {
        let env = try TestEnv()
        let db = env.db
        try env.createIndex(collection: "posts", fields: Timeline.postsIndex)
        let users = ["u0", "u1", "u2", "u3", "u4", "u5"]
        var rng = Rng(state: seed)

        // The model: posts per author (oldest first), who follows whom, and each user's expected feed.
        var postsBy: [String: [String]] = [:]
        var following: [String: Set<String>] = [:]
        var expected: [String: Set<String>] = [:]
        var ownerOf: [String: String] = [:]
        var clock = 0

        for _ in 0..<200 {
            let a = users[rng.next(users.count)]
            var b = users[rng.next(users.count)]
            if a == b { b = users[(users.firstIndex(of: a)! + 1) % users.count] }
            switch rng.next(10) {
            case 0..<4:   // post; half of them by u0, so u0 ends up with more than `backfill` posts
                let a = rng.next(2) == 0 ? "u0" : a
                clock += 1
                let id = try await Timeline.post(db, a, caption: "\(a) #\(clock)", at: Timestamp(date: base.addingTimeInterval(Double(clock))))
                postsBy[a, default: []].append(id)
                ownerOf[id] = a
                expected[a, default: []].insert(id)
                for u in users where following[u, default: []].contains(a) { expected[u, default: []].insert(id) }
            case 4..<7:   // follow (again, if already following: idempotent, re-backfills)
                try await Timeline.follow(db, a, b)
                following[a, default: []].insert(b)
                expected[a, default: []].formUnion(postsBy[b, default: []].suffix(Timeline.backfill))
            default:      // unfollow (a no-op if not following)
                try await Timeline.unfollow(db, a, b)
                following[a, default: []].remove(b)
                expected[a, default: []].subtract(postsBy[b, default: []])
            }
        }
        #expect(postsBy["u0", default: []].count > Timeline.backfill, "the backfill window is exercised")

        for u in users {
            let entries = try await Timeline.feed(db, u).getDocuments().documents
            let ids = Set(entries.map(\.documentID))
            #expect(ids == expected[u, default: []], "feed of \(u) (seed \(seed))")
            // The invariants in plain words: nothing from anyone not followed (or self) ...
            let allowed = following[u, default: []].union([u])
            #expect(entries.allSatisfy { allowed.contains($0.get("ownerUid") as? String ?? "") }, "\(u) sees a stranger's post")
            #expect(entries.allSatisfy { ownerOf[$0.documentID] == $0.get("ownerUid") as? String })
            // ... and the relation documents agree on both sides.
            let followingDocs = Set(try await Timeline.user(db, u).collection("following").getDocuments().documents.map(\.documentID))
            #expect(followingDocs == following[u, default: []])
            let followerDocs = Set(try await Timeline.user(db, u).collection("followers").getDocuments().documents.map(\.documentID))
            #expect(followerDocs == Set(users.filter { following[$0, default: []].contains(u) }))
        }
        // ... and never misses a post made while following: every own post, and every post of a followed
        // author that is newer than the backfill window at follow time, is in the feed (implied by the
        // equality above; checked directly for the own posts).
        for u in users { #expect(Set(postsBy[u, default: []]).isSubset(of: expected[u, default: []])) }
    }

    @Test func liveFeedListenerSeesANewPostAtIndexZero() async throws {
        let env = try TestEnv()
        let db = env.db
        try env.createIndex(collection: "posts", fields: Timeline.postsIndex)
        for i in 0..<30 {
            try await Timeline.post(db, "conan", caption: "c\(i)", at: Timestamp(date: base.addingTimeInterval(Double(i))))
        }
        try await Timeline.follow(db, "doraemon", "conan")
        let backfilled = try await Timeline.feed(db, "doraemon").getDocuments().documents
        #expect(backfilled.count == Timeline.backfill, "only the 20 most recent posts are backfilled")

        let snaps = Recorder<QuerySnapshot>()
        let registration = Timeline.feedQuery(db, "doraemon").addSnapshotListener(snaps.callback)
        defer { registration.remove() }
        let initial = try await snaps.wait(for: 1)[0]
        #expect(initial.count == 20)
        let initialPosts = try await Timeline.posts(db, for: initial.documents)
        #expect(initialPosts.map(\.caption) == (10..<30).reversed().map { "c\($0)" })

        let newId = try await Timeline.post(db, "conan", caption: "new", at: Timestamp(date: base.addingTimeInterval(100)))
        try await snaps.wait { $0.last?.documents.first?.documentID == newId }
        let after = try #require(snaps.values.last)
        #expect(after.count == 20)
        // One commit, one snapshot: the new post added at 0, the oldest pushed past the limit.
        let changes = after.documentChanges.map { ($0.type, $0.document.documentID) }
        #expect(after.documentChanges.count == 2)
        #expect(changes.contains { $0 == (.added, newId) })
        #expect(after.documentChanges.first { $0.type == .added }?.newIndex == 0)
        #expect(after.documentChanges.first { $0.type == .removed }?.oldIndex == 19)
        #expect(try await Timeline.posts(db, for: [after.documents[0]]).first?.caption == "new")

        // A post of someone not followed never reaches the listener; the next followed post does.
        try await Timeline.post(db, "stranger", caption: "nope", at: Timestamp(date: base.addingTimeInterval(200)))
        let next = try await Timeline.post(db, "conan", caption: "next", at: Timestamp(date: base.addingTimeInterval(300)))
        try await snaps.wait { $0.last?.documents.first?.documentID == next }
        #expect(snaps.values.allSatisfy { $0.documents.allSatisfy { $0.get("ownerUid") as? String == "conan" } })

        // Unfollowing empties the feed in one snapshot.
        try await Timeline.unfollow(db, "doraemon", "conan")
        try await snaps.wait { $0.last?.isEmpty == true }
        #expect(snaps.values.last?.documentChanges.allSatisfy { $0.type == .removed } == true)
        #expect(snaps.failures.isEmpty)
    }

    @Test func feedPageLoadsFullPostsWithOneGetAll() async throws {
        let env = try TestEnv()
        let db = env.db
        try env.createIndex(collection: "posts", fields: Timeline.postsIndex)
        var ids: [String] = []   // oldest first, alternating authors
        for i in 0..<12 {
            let author = i % 2 == 0 ? "conan" : "nobita"
            ids.append(try await Timeline.post(db, author, caption: "p\(i)", at: Timestamp(date: base.addingTimeInterval(Double(i)))))
        }
        try await Timeline.follow(db, "doraemon", "conan")
        try await Timeline.follow(db, "doraemon", "nobita")

        let page1 = try await Timeline.feedQuery(db, "doraemon", limit: 5).getDocuments().documents
        let posts1 = try await Timeline.posts(db, for: page1)
        #expect(posts1.map(\.id) == Array(ids.suffix(5).reversed()))
        #expect(posts1.map(\.caption) == ["p11", "p10", "p9", "p8", "p7"])
        #expect(posts1.map(\.ownerUid) == ["nobita", "conan", "nobita", "conan", "nobita"])
        // The entry already carries what the page sorts and filters by: it agrees with the post.
        for (entry, post) in zip(page1, posts1) {
            let e = try entry.data(as: Timeline.FeedEntry.self)
            #expect(e.id == post.id && e.ownerUid == post.ownerUid && e.timestamp == post.timestamp)
        }

        let page2 = try await Timeline.feedQuery(db, "doraemon", limit: 5).start(afterDocument: page1.last!).getDocuments().documents
        #expect(try await Timeline.posts(db, for: page2).map(\.caption) == ["p6", "p5", "p4", "p3", "p2"])

        // A deleted post is skipped by the page, not an error.
        try await db.collection("posts").document(ids[11]).delete()
        #expect(try await Timeline.posts(db, for: page1).map(\.caption) == ["p10", "p9", "p8", "p7"])
    }
}

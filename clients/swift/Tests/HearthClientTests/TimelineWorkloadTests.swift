import Foundation
import HearthTesting
import Testing
import HearthClient

// Workload: follower timelines (seed 003), against a real daemon. Each user has a feed of entries
// `users/{uid}/user-feed/{postId}` ({ownerUid, timestamp}); following a user backfills their recent posts,
// unfollowing removes their entries, posting fans out to every follower. Each of the three is ONE
// transaction (one atomic commit) that reads and writes the author's document `users/{author}`, so flows on
// the same author serialize even though their query reads are outside the transaction. See
// docs/guides/timelines.md (the argument is in "Why concurrent flows stay exact").

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

    /// Every flow reads and writes the author's document, so flows on one author take turns: under a burst
    /// on a popular author a transaction can lose several times in a row, and Firestore's default of 5
    /// attempts runs out (in the concurrency test, with half of 20 tasks' flows on one author, a flow needed
    /// up to 6).
    static let options = TransactionOptions(maxAttempts: 20)

    static func user(_ db: Hearth, _ uid: String) -> DocumentReference { db.collection("users").document(uid) }
    static func feed(_ db: Hearth, _ uid: String) -> CollectionReference { user(db, uid).collection("user-feed") }

    /// `follower` follows `followee`, in one transaction on the followee's document: read it, read the
    /// relation (already following: nothing to do, returns false), query the followee's recent posts, then
    /// commit `followerCount + 1`, both relation documents and the backfilled feed entries.
    @discardableResult
    static func follow(_ db: Hearth, _ follower: String, _ followee: String) async throws -> Bool {
        precondition(follower != followee)
        let author = user(db, followee)
        let relation = author.collection("followers").document(follower)
        return try await db.runTransaction(options: options) { t in
            let authorDoc = try await t.getDocument(author)          // first: every flow on this author writes it
            if try await t.getDocument(relation).exists { return false }
            let recent = try await db.collection("posts")            // a query: protected by the author's precondition
                .whereField("ownerUid", isEqualTo: followee)
                .order(by: "timestamp", descending: true)
                .limit(to: backfill)
                .getDocuments().documents
            t.setData(["followerCount": (authorDoc.get("followerCount") as? Int ?? 0) + 1], forDocument: author, merge: true)
            t.setData(["since": FieldValue.serverTimestamp()], forDocument: relation)
            t.setData(["since": FieldValue.serverTimestamp()], forDocument: user(db, follower).collection("following").document(followee))
            for post in recent {
                t.setData(["ownerUid": followee, "timestamp": post.get("timestamp")!],
                          forDocument: feed(db, follower).document(post.documentID))
            }
            return true
        }
    }

    /// `follower` stops following `followee`, in one transaction on the followee's document: read it, read
    /// the relation (not following: nothing to do, returns false), query the followee's entries in the
    /// follower's feed (by `ownerUid`: backfilled and fanned out alike), then commit `followerCount - 1` and
    /// the deletion of both relation documents and those entries.
    @discardableResult
    static func unfollow(_ db: Hearth, _ follower: String, _ followee: String) async throws -> Bool {
        precondition(follower != followee)
        let author = user(db, followee)
        let relation = author.collection("followers").document(follower)
        return try await db.runTransaction(options: options) { t in
            let authorDoc = try await t.getDocument(author)
            if try await !t.getDocument(relation).exists { return false }
            let entries = try await feed(db, follower).whereField("ownerUid", isEqualTo: followee).getDocuments().documents
            t.setData(["followerCount": (authorDoc.get("followerCount") as? Int ?? 0) - 1], forDocument: author, merge: true)
            t.deleteDocument(relation)
            t.deleteDocument(user(db, follower).collection("following").document(followee))
            for entry in entries { t.deleteDocument(entry.reference) }
            return true
        }
    }

    /// Publishes a post, in one transaction on the author's document: read it, query the followers, then
    /// commit `postCount + 1`, the post, the author's own feed entry and one entry per follower. The post's
    /// `timestamp` is its commit time (`at` fixes it instead, for tests that need known times).
    @discardableResult
    static func post(_ db: Hearth, _ ownerUid: String, caption: String, at time: Timestamp? = nil) async throws -> String {
        let author = user(db, ownerUid)
        let postRef = db.collection("posts").document()              // ID made on the client, before any attempt
        let timestamp: Any = time ?? FieldValue.serverTimestamp()
        try await db.runTransaction(options: options) { t in
            let authorDoc = try await t.getDocument(author)
            let followers = try await author.collection("followers").getDocuments().documents.map(\.documentID)
            t.setData(["postCount": (authorDoc.get("postCount") as? Int ?? 0) + 1, "lastPostAt": timestamp],
                      forDocument: author, merge: true)
            t.setData(["ownerUid": ownerUid, "caption": caption, "timestamp": timestamp], forDocument: postRef)
            for uid in [ownerUid] + followers {
                t.setData(["ownerUid": ownerUid, "timestamp": timestamp], forDocument: feed(db, uid).document(postRef.documentID))
            }
        }
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
            case 4..<7:   // follow (a no-op if already following)
                let followed = try await Timeline.follow(db, a, b)
                #expect(followed == !following[a, default: []].contains(b))
                if followed { expected[a, default: []].formUnion(postsBy[b, default: []].suffix(Timeline.backfill)) }
                following[a, default: []].insert(b)
            default:      // unfollow (a no-op if not following)
                let unfollowed = try await Timeline.unfollow(db, a, b)
                #expect(unfollowed == following[a, default: []].contains(b))
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
            // ... and the author document's counters are exact.
            let profile = try await Timeline.user(db, u).getDocument()
            #expect(profile.get("followerCount") as? Int ?? 0 == followerDocs.count)
            #expect(profile.get("postCount") as? Int ?? 0 == postsBy[u, default: []].count)
        }
        // ... and never misses a post made while following: every own post, and every post of a followed
        // author that is newer than the backfill window at follow time, is in the feed (implied by the
        // equality above; checked directly for the own posts).
        for u in users { #expect(Set(postsBy[u, default: []]).isSubset(of: expected[u, default: []])) }
    }

    /// 20 concurrent tasks × 10 rounds of follow / unfollow / post on six users, half of them on the hot
    /// author u0 (so follows and unfollows of u0 race u0's posts). Posts take their commit time as
    /// `timestamp`, and `since` is the follow's commit time; commit times increase with the commit order.
    /// A serial history therefore leaves, for every user X, exactly
    ///     feed(X) = posts(X) ∪ ⋃ over A that X follows at the end, followed since S:
    ///               { A's 20 newest posts with timestamp < S } ∪ { A's posts with timestamp > S }
    /// (the last follow of A backfilled the first set and every later post of A fanned out to X; an
    /// unfollow in between would have deleted the relation; an earlier unfollow deleted everything older).
    /// Checked: (a) no entry of anyone X does not follow, (b) nothing of that set missing, (c) the feed is
    /// exactly that set, (d) the relation documents agree and the counters are exact.
    @Test func concurrentFollowsUnfollowsAndPostsKeepEveryFeedExact() async throws {
        let env = try TestEnv()
        let db = env.db
        try env.createIndex(collection: "posts", fields: Timeline.postsIndex)
        let users = ["u0", "u1", "u2", "u3", "u4", "u5"]
        let (tasks, rounds) = (20, 10)

        let posted: [String] = try await withThrowingTaskGroup(of: [String].self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var rng = Rng(state: 7_000 + UInt64(task))
                    var mine: [String] = []
                    for round in 0..<rounds {
                        let author = rng.next(2) == 0 ? "u0" : users[rng.next(users.count)]
                        var follower = users[rng.next(users.count)]
                        if follower == author { follower = users[(users.firstIndex(of: author)! + 1) % users.count] }
                        switch rng.next(10) {
                        case 0..<4: mine.append(try await Timeline.post(db, author, caption: "t\(task) r\(round)"))
                        case 4..<7: try await Timeline.follow(db, follower, author)
                        default: try await Timeline.unfollow(db, follower, author)
                        }
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }

        // The final state: every post with its commit time, every relation with its `since`.
        let postDocs = try await db.collection("posts").getDocuments().documents
        #expect(Set(postDocs.map(\.documentID)) == Set(posted) && postDocs.count == posted.count)
        var postsOf: [String: [(id: String, at: Timestamp)]] = [:]
        var postById: [String: (owner: String, at: Timestamp)] = [:]
        for p in postDocs {
            let owner = try #require(p.get("ownerUid") as? String), at = try #require(p.get("timestamp") as? Timestamp)
            postsOf[owner, default: []].append((p.documentID, at))
            postById[p.documentID] = (owner, at)
        }
        #expect(postsOf["u0", default: []].count > Timeline.backfill, "the backfill window is exercised")
        var since: [String: [String: Timestamp]] = [:]   // since[follower][followee]
        for u in users {
            for f in try await Timeline.user(db, u).collection("following").getDocuments().documents {
                since[u, default: [:]][f.documentID] = try #require(f.get("since") as? Timestamp)
            }
        }

        var problems: [String] = []
        for u in users {
            // (d) both sides of every relation (same commit, same `since`) and the counters.
            let followers = try await Timeline.user(db, u).collection("followers").getDocuments().documents
            let sides = Dictionary(uniqueKeysWithValues: followers.map { ($0.documentID, $0.get("since") as? Timestamp) })
            let expectedSides = Dictionary(uniqueKeysWithValues: users.compactMap { x in since[x]?[u].map { (x, Optional($0)) } })
            if sides != expectedSides { problems.append("(d) followers of \(u) \(sides.keys.sorted()) vs following \(expectedSides.keys.sorted())") }
            let profile = try await Timeline.user(db, u).getDocument()
            let (followerCount, postCount) = (profile.get("followerCount") as? Int ?? 0, profile.get("postCount") as? Int ?? 0)
            if followerCount != followers.count { problems.append("(d) \(u).followerCount \(followerCount), followers \(followers.count)") }
            if postCount != postsOf[u, default: []].count { problems.append("(d) \(u).postCount \(postCount), posts \(postsOf[u, default: []].count)") }
        }
        for x in users {
            var expected = Set(postsOf[x, default: []].map(\.id))
            for (a, s) in since[x, default: [:]] {
                let posts = postsOf[a, default: []]
                expected.formUnion(posts.filter { $0.at < s }.sorted { $0.at > $1.at }.prefix(Timeline.backfill).map(\.id))
                expected.formUnion(posts.filter { $0.at > s }.map(\.id))
            }
            let entries = try await Timeline.feed(db, x).getDocuments().documents
            let ids = Set(entries.map(\.documentID))
            let allowed = Set(since[x, default: [:]].keys).union([x])
            let strangers = entries.filter { !allowed.contains($0.get("ownerUid") as? String ?? "") }
            if !strangers.isEmpty {
                problems.append("(a) \(x) has \(strangers.count) entries of users not followed: \(Set(strangers.compactMap { $0.get("ownerUid") as? String }).sorted())")
            }
            let missing = expected.subtracting(ids)
            if !missing.isEmpty {
                problems.append("(b) \(x) misses \(missing.count) posts of followed users: \(missing.compactMap { postById[$0]?.owner }.sorted())")
            }
            let extra = ids.subtracting(expected).subtracting(strangers.map(\.documentID))
            if !extra.isEmpty { problems.append("(c) \(x) has \(extra.count) entries beyond its expected set") }
            for e in entries where postById[e.documentID].map({ $0.owner != e.get("ownerUid") as? String || $0.at != e.get("timestamp") as? Timestamp }) ?? true {
                problems.append("(c) \(x)'s entry \(e.documentID) does not match a post")
            }
        }
        #expect(problems.isEmpty, "\(problems.count) problems after \(posted.count) posts:\n\(problems.joined(separator: "\n"))")
    }

    /// A post to 1,000 followers is ONE commit (Hearth allows 10,000 writes per commit, Firestore 500): the
    /// database's `seq` advances by exactly one, and the entry is in all 1,001 feeds.
    @Test func postToAThousandFollowersIsOneCommit() async throws {
        let env = try TestEnv()
        let db = env.db
        let star = Timeline.user(db, "star")
        let followers = (0..<1_000).map { "f\($0)" }
        // The relation as 1,000 follows would have left it, written directly (one batch of 2,001 writes).
        let seed = db.batch()
        seed.setData(["followerCount": followers.count], forDocument: star)
        for f in followers {
            seed.setData(["since": FieldValue.serverTimestamp()], forDocument: star.collection("followers").document(f))
            seed.setData(["since": FieldValue.serverTimestamp()], forDocument: Timeline.user(db, f).collection("following").document("star"))
        }
        try await seed.commit()

        let before = try #require(try env.raw(#"{"op":"ping"}"#)["seq"] as? Int)
        let id = try await Timeline.post(db, "star", caption: "to everyone")
        let after = try #require(try env.raw(#"{"op":"ping"}"#)["seq"] as? Int)
        #expect(after == before + 1, "the post, its 1,001 feed entries and the author document are one commit")
        let entries = try await db.getAll(followers.map { Timeline.feed(db, $0).document(id) })   // getAll: up to 1,000 paths
        #expect(entries.allSatisfy { $0.exists && $0.get("ownerUid") as? String == "star" })
        #expect(try await Timeline.feed(db, "star").document(id).getDocument().exists)
        #expect(try await star.getDocument().get("postCount") as? Int == 1)
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

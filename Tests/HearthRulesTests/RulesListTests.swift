import HearthModel
import Testing
@testable import HearthRules

/// Rules are not filters: a list request is judged from the query's own constraints.
@Suite("Rules: list queries are judged from the query")
struct RulesListTests {
    static let rules = compileRules("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /stories/{storyid} {
              allow read: if request.auth != null && (resource.data.published == true || resource.data.author == request.auth.uid);
            }
            match /users/{uid}/posts/{post} {
              allow list: if request.auth.uid == uid && resource.data.visibility in ['public', 'friends'];
            }
            match /events/{e} {
              allow list: if resource.data.day >= 10 && resource.data.day < 20;
            }
            match /small/{d} {
              allow list: if request.query.limit <= 50 && request.query.offset == 0;
            }
            match /{path=**}/comments/{c} {
              allow list: if resource.data.public == true;
            }
            match /rooms/{room}/messages/{m} {
              allow list: if m == 'pinned' && resource.id == 'pinned';
            }
            match /open/{doc=**} {
              allow read: if resource != null && request.auth != null;
            }
            match /teams/{t} {
              allow list: if get(/databases/$(database)/documents/teams/$(resource.data.team)/members/$(request.auth.uid)).data.active;
            }
          }
        }
        """, file: "list.rules")

    static let stories = Query.collection(col("stories"))

    @Test("allowed queries", arguments: [
        (stories.filtered(eq("author", "alice")), "alice"),
        (stories.filtered(eq("published", true)), "bob"),
        (stories.filtered(.composite(.or, [eq("published", true), eq("author", "carol")])), "carol"),
        (stories.filtered(and(eq("published", true), .field(fp("likes"), .greaterThan, 3))), "dan"),
        (stories.filtered(.field(fp("author"), .in, ["alice"])), "alice"),
        (Query.collection(col("users/alice/posts")).filtered(eq("visibility", "public")), "alice"),
        (Query.collection(col("users/alice/posts")).filtered(.field(fp("visibility"), .in, ["public", "friends"])), "alice"),
        (Query.collection(col("events")).filtered(and(.field(fp("day"), .greaterThanOrEqual, 12), .field(fp("day"), .lessThan, 15))), "x"),
        (Query.collection(col("events")).filtered(eq("day", 11)), "x"),
        (Query.collection(col("small")).limited(10), "x"),
        (Query.collectionGroup("comments").filtered(eq("public", true)), "x"),
        (Query.collection(col("blogs/b1/comments")).filtered(eq("public", true)), "x"),
        (Query.collection(col("rooms/r1/messages")).filtered(.field(.documentID, .equal, .reference(doc("rooms/r1/messages/pinned")))), "x"),
        (Query.collection(col("open/a/b")), "x"),
    ] as [(Query, String)])
    func allowed(_ q: Query, _ uid: String) {
        let d = Self.rules.evaluate(listRequest(q, uid: uid), reader: NoDocumentReader())
        #expect(d.allowed, "\(q): \(d.reason)")
    }

    @Test("refused queries name the rule and what the query must constrain", arguments: [
        (stories, "alice", "list.rules:5:7: list on /stories/{storyid} needs the query to constrain \"published\" with == (or in)"),
        (stories.filtered(eq("author", "bob")), "alice", "needs the query to constrain \"published\" with == (or in)"),
        (stories.filtered(.field(fp("author"), .in, ["alice", "bob"])), "alice", "constrain \"published\""),
        (stories.filtered(eq("published", false)), "alice", "constrain \"author\""),
        (Query.collection(col("users/alice/posts")).filtered(eq("visibility", "public")), "bob", "no rule allows list on /databases/(default)/documents/users/alice/posts: the condition is false at list.rules:8:7"),
        (Query.collection(col("users/alice/posts")).filtered(.field(fp("visibility"), .in, ["public", "private"])), "alice", "the condition is false"),
        (Query.collection(col("users/alice/posts")), "alice", "constrain \"visibility\" with == (or in)"),
        (Query.collection(col("events")).filtered(.field(fp("day"), .greaterThanOrEqual, 12)), "x",
         "list.rules:11:7: list on /events/{e} needs the query to constrain \"day\" so that resource.data.day < 20 holds for every result"),
        (Query.collection(col("events")).filtered(.field(fp("day"), .greaterThan, 25)), "x", "the condition is false"),
        (Query.collection(col("small")).limited(100), "x", "the condition is false"),
        (Query.collection(col("small")), "x", "cannot compare a null with a int"),
        (Query.collectionGroup("comments"), "x", "needs the query to constrain \"public\""),
        (Query.collection(col("rooms/r1/messages")), "x", "needs the query to fix the document ID"),
        (Query.collectionGroup("stories").filtered(eq("published", true)), "x", "no rule allows list on collection group 'stories'"),
        (Query.collection(col("teams")), "x", "needs the query to constrain \"team\""),
    ] as [(Query, String, String)])
    func refused(_ q: Query, _ uid: String, _ reason: String) {
        let d = Self.rules.evaluate(listRequest(q, uid: uid), reader: NoDocumentReader())
        #expect(!d.allowed, "\(q)")
        #expect(d.reason.contains(reason), "\(d.reason)")
    }

    @Test("a list rule may read documents named by pinned fields; the reads are reported")
    func listWithGet() {
        let reader = FakeReader(before: ["teams/red/members/ann": ["active": true]])
        let q = Query.collection(col("teams")).filtered(eq("team", "red"))
        let ok = Self.rules.evaluate(listRequest(q, uid: "ann"), reader: reader)
        #expect(ok.allowed, "\(ok.reason)")
        #expect(ok.reads == [doc("teams/red/members/ann")])
        let other = Self.rules.evaluate(listRequest(q, uid: "bob"), reader: reader)
        #expect(!other.allowed)
        #expect(other.reads == [doc("teams/red/members/bob")])
    }

    @Test("an invalid query is denied with its validation error")
    func invalidQuery() {
        var q = Self.stories
        q.limit = -1
        let d = Self.rules.evaluate(listRequest(q, uid: "a"), reader: NoDocumentReader())
        #expect(!d.allowed && d.reason.hasPrefix("the query is invalid: limit must not be negative"), "\(d.reason)")
    }

    @Test("range reasoning: every value in the bounds, none of them, or undecidable", arguments: [
        (BinaryOp.lt, 20, [(10, true)], [(15, false)], true as Bool?),
        // Without a numeric lower bound the range holds NaN (queries order it below every number), which no
        // rules comparison orders: `true` is not settled then.
        (.lt, 15, [], [(15, false)], nil), (.lt, 15, [(0, true)], [(15, false)], true), (.lt, 15, [], [(15, true)], nil),
        (.le, 15, [], [(15, true)], nil), (.le, 15, [(-3, false)], [(15, true)], true),
        (.gt, 5, [(5, false)], [], true), (.gt, 5, [(5, true)], [], nil), (.ge, 5, [(5, true)], [], true),
        (.lt, 5, [(5, true)], [], false), (.gt, 30, [], [(30, true)], nil), (.gt, 30, [(0, true)], [(30, true)], false),
        (.eq, 3, [(5, true)], [], false),
        (.ne, 3, [], [(2, true)], true), (.eq, 5, [(5, true)], [(5, true)], nil),
    ] as [(BinaryOp, Int64, [(Int64, Bool)], [(Int64, Bool)], Bool?)])
    func ranges(_ op: BinaryOp, _ c: Int64, _ lower: [(Int64, Bool)], _ upper: [(Int64, Bool)], _ expected: Bool?) throws {
        let decided = try Evaluator.judgeRange(op, .int(c), lower: lower.map { .init(value: .int($0.0), inclusive: $0.1) },
                                               upper: upper.map { .init(value: .int($0.0), inclusive: $0.1) }, SourcePos(1, 1))
        #expect(decided == expected)
    }
}

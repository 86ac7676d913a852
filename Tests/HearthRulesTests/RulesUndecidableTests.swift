import HearthModel
import Testing
@testable import HearthRules

/// A list query is allowed only when the rule holds for every document it could return. What the query does
/// not pin must make the rule undecidable wherever it is used, also inside a list or map literal, and a range
/// that holds NaN (queries order it below every number) settles no ordering as true.
@Suite("Rules: what a query does not pin stays undecidable")
struct RulesUndecidableTests {
    static let rules = compileRules("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /posts/{id} { allow read: if !['deleted', 'hidden'].hasAny([resource.data.status]); }
            match /wrapped/{id} { allow read: if [resource.data.status] != ['deleted']; }
            match /mapped/{id} { allow read: if {'s': resource.data.status} != {'s': 'deleted'}; }
            match /roles/{id} { allow read: if ![resource.data.role].hasAny(['admin']); }
            match /scores/{id} { allow read: if resource.data.score < 20; }
            match /floors/{id} { allow read: if resource.data.score >= -5; }
            match /levels/{id} { allow read: if !(resource.data.level > 3); }
            match /ints/{id} { allow read: if resource.data.n is int; }
            match /floats/{id} { allow read: if resource.data.n is float; }
            match /texts/{id} { allow read: if string(resource.data.n) == '1'; }
            match /values/{id} { allow read: if resource.data.n == 1 && resource.data.n < 5; }
            match /halves/{id} { allow read: if resource.data.n / 2 == 0; }
            match /zeros/{id} { allow read: if string(resource.data.n) in ['0', '0.0']; }
            match /nested/{id} { allow read: if resource.data.m.a is int; }
          }
        }
        """, file: "undecidable.rules")

    func judge(_ q: Query) -> RuleDecision { Self.rules.evaluate(listRequest(q, uid: "u"), reader: NoDocumentReader()) }

    @Test("a field the query does not pin, inside a list or a map literal", arguments: ["posts", "wrapped", "mapped", "roles"])
    func unpinnedInsideALiteral(_ collection: String) {
        let field = collection == "roles" ? "role" : "status"
        let open = judge(Query.collection(col(collection)))
        #expect(!open.allowed, "\(collection): \(open.reason)")
        #expect(open.reason.contains("needs the query to constrain \"\(field)\""), "\(open.reason)")
        // Pinned by the query, the same rule is decided, either way.
        let good = collection == "roles" ? "user" : "live"
        let bad = collection == "roles" ? "admin" : (collection == "posts" ? "hidden" : "deleted")
        #expect(judge(Query.collection(col(collection)).filtered(eq(field, .string(good)))).allowed)
        #expect(!judge(Query.collection(col(collection)).filtered(eq(field, .string(bad)))).allowed)
    }

    @Test("a numeric range without a lower bound holds NaN: it settles no ordering")
    func nanInARange() {
        let below = judge(Query.collection(col("scores")).filtered(.field(fp("score"), .lessThan, 15)))
        #expect(!below.allowed, "score < 15 holds NaN, which `< 20` cannot order: \(below.reason)")
        #expect(below.reason.contains("needs the query to constrain \"score\""), "\(below.reason)")
        let bounded = judge(Query.collection(col("scores")).filtered(and(.field(fp("score"), .greaterThanOrEqual, 0),
                                                                         .field(fp("score"), .lessThan, 15))))
        #expect(bounded.allowed, "a lower bound excludes NaN: \(bounded.reason)")
        #expect(judge(Query.collection(col("floors")).filtered(.field(fp("score"), .greaterThan, 3))).allowed,
                "a lower bound alone excludes NaN too")
        #expect(!judge(Query.collection(col("scores")).filtered(.field(fp("score"), .lessThan, 30))).allowed)
        // Nor as false: `!(level > 3)` would then hold for NaN, which the rule denies.
        let negated = judge(Query.collection(col("levels")).filtered(.field(fp("level"), .lessThanOrEqual, 3)))
        #expect(!negated.allowed && negated.reason.contains("needs the query to constrain \"level\""), "\(negated.reason)")
        #expect(judge(Query.collection(col("levels")).filtered(and(.field(fp("level"), .greaterThanOrEqual, 0),
                                                                   .field(fp("level"), .lessThanOrEqual, 3)))).allowed)
    }

    /// A query compares numbers by value: `n == 1` also returns documents holding 1.0 (and `n == 0` also -0.0),
    /// which a rule on the type, the text or an integer division of `n` denies on its own. Each form is judged;
    /// what every form satisfies stays allowed.
    @Test("a pinned number is judged in every form the query returns it in")
    func pinnedNumbers() {
        func q(_ c: String, _ f: Filter) -> Bool { judge(Query.collection(col(c)).filtered(f)).allowed }
        let one = Value.int(1), oneF = Value.double(1)
        #expect(!q("ints", eq("n", one)), "n == 1 returns 1.0 too, which `is int` denies")
        let why = judge(Query.collection(col("ints")).filtered(eq("n", one))).reason
        #expect(why.hasSuffix("(for documents holding n as 1.0, which the query returns too: it matches numbers by value)"), "\(why)")
        #expect(!q("floats", eq("n", oneF)), "n == 1.0 returns 1 too")
        #expect(!q("texts", eq("n", one)), "string(1.0) is '1.0'")
        #expect(!q("halves", eq("n", one)), "1 / 2 is 0, 1.0 / 2 is not")
        #expect(!q("zeros", eq("n", 0)), "n == 0 returns -0.0 too, whose text is '-0.0'")
        #expect(!q("ints", .field(fp("n"), .in, [2, 3])), "each value of in, in each form")
        #expect(!q("nested", eq("m", ["a": one])), "a number inside a pinned map")
        // What holds for every form stays allowed.
        #expect(q("values", eq("n", one)) && q("values", eq("n", oneF)))
        #expect(q("floats", eq("n", .double(1.5))), "no integer is 1.5")
        #expect(q("ints", eq("n", .int(9_007_199_254_740_993))), "no float is 2^53 + 1")
        #expect(!q("ints", eq("n", .double(9_007_199_254_740_992))), "2^53 is a float and an integer")
    }

    /// The forms of a pinned value, and their bounds: a map of many integers, or a long list holding one, has
    /// too many to judge, so the field is left unpinned (undecidable), never pinned in one form; a value without
    /// such numbers is taken as it is, whatever its size, in one pass.
    @Test("the forms of a pinned value")
    func matchedForms() {
        #expect(ListCase.matchedForms(.string("a"), limit: 256)?.count == 1)
        #expect(ListCase.matchedForms(.int(0), limit: 256)?.count == 3)
        #expect(ListCase.matchedForms(.double(-0.0), limit: 256)?.count == 3)
        #expect(ListCase.matchedForms(.double(.nan), limit: 256)?.count == 1)
        #expect(ListCase.matchedForms(.double(1e300), limit: 256)?.count == 1)
        #expect(ListCase.matchedForms(.array([1, 2, "x"]), limit: 256)?.count == 4)
        let many = Value.map(MapValue((0..<10).map { MapValue.Field(key: "k\($0)", value: .int(Int64($0 + 1))) }))
        #expect(ListCase.matchedForms(many, limit: 256) == nil)
        // Long lists: 200,000 members (quadratic work would not finish).
        let nulls = [Value](repeating: .null, count: 200_000)
        #expect(ListCase.matchedForms(.array(nulls), limit: 256)?.count == 1, "no number: the value itself")
        #expect(ListCase.matchedForms(.array([1, 2, 3] + nulls), limit: 256) == nil, "too many members to enumerate")
        let sixtyFour = [Value.int(1)] + [Value](repeating: .null, count: 63)
        #expect(ListCase.matchedForms(.array(sixtyFour), limit: 256)?.count == 2, "64 members: enumerated")
        #expect(ListCase.matchedForms(.array(sixtyFour + [.null]), limit: 256) == nil, "65: not")
        let rules = compileRules("""
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /many/{id} { allow read: if resource.data.m.k0 == 1; }
              }
            }
            """, file: "many.rules")
        let d = rules.evaluate(listRequest(Query.collection(col("many")).filtered(eq("m", many)), uid: "u"),
                               reader: NoDocumentReader())
        #expect(!d.allowed && d.reason.contains("needs \"m\", which the query's == (or in) matches in more forms than are judged"),
                "\(d.reason)")
    }

    /// The forms of several numbers multiply the cases, up to `ListCase.maxCases` for the query; fields are
    /// expanded in the order of their paths, so the filters' order changes nothing, and the disjuncts of an
    /// `or` share the bound.
    @Test("the cases of many pinned numbers are bounded, whatever the filters' order")
    func manyPinnedNumbers() {
        let rules = compileRules("""
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /t/{id} { allow read: if resource.data.tenant == 7; }
              }
            }
            """, file: "tenant.rules")
        func judge(_ filters: [Filter]) -> RuleDecision {
            rules.evaluate(listRequest(Query.collection(col("t")).filtered(.composite(.and, filters)), uid: "u"),
                           reader: NoDocumentReader())
        }
        let others = (1...8).map { eq("a\($0)", .int(Int64($0))) }
        let first = judge([eq("tenant", 7)] + others), last = judge(others + [eq("tenant", 7)])
        #expect(first.allowed == last.allowed && first.reason == last.reason, "\(first.reason) | \(last.reason)")
        #expect(ListCase.cases(of: try! Query.collection(col("t")).filtered(.composite(.and, others + [eq("tenant", 7)])).validated()).count <= ListCase.maxCases)
        // Fewer numbers: every one pinned in each form.
        #expect(judge(Array(others.prefix(4)) + [eq("tenant", 7)]).allowed)
        // A one-form value inside an `in` is taken as it is, however long (copying it member by member to
        // make its forms was quadratic): one `in` of 1 and a list of 200,000 nulls makes three cases.
        let huge = Filter.field(fp("x"), .in, [1, .array([Value](repeating: .null, count: 200_000))])
        #expect(ListCase.cases(of: try! Query.collection(col("t")).filtered(huge).validated()).count == 3)
        // Twelve disjuncts of eight numbers each (96 filters of the 100 a query may have): still at most
        // maxCases in all.
        let or = Filter.composite(.or, (0..<12).map { i in .composite(.and, (1...8).map { eq("f\($0)", .int(Int64(i * 10 + $0))) }) })
        let cases = ListCase.cases(of: try! Query.collection(col("t")).filtered(or).validated())
        #expect(cases.count <= ListCase.maxCases, "\(cases.count) cases")
    }

    /// `RuleMembership` (sets, `hasAny`, `hasAll`, `hasOnly`, `removeAll`, `toSet`) hashes scalars; it must
    /// answer exactly as comparing with `RuleValue.equal` one by one does.
    @Test("membership by hash equals membership by comparison")
    func membershipMatchesEquality() {
        let values: [RuleValue] = [
            .null, .bool(true), .bool(false), .int(0), .float(0), .float(-0.0), .int(1), .float(1), .float(1.5),
            .float(.nan), .float(.infinity), .float(-.infinity), .int(Int64.max), .float(9_223_372_036_854_775_808.0),
            .int(Int64.min), .float(-9_223_372_036_854_775_808.0), .int(9_007_199_254_740_993), .float(9_007_199_254_740_992),
            .string(""), .string("a"), .string("é"), .string("e\u{301}"), .bytes([1, 2]), .bytes([]),
            .timestamp(Timestamp(micros: 5)), .duration(5), .latlng(GeoPoint(latitude: 1, longitude: 2)),
            .path(RulePath(["a", "b"])), .path(RulePath(["a", "é"])), .path(RulePath(["a", "e\u{301}"])),
            .list([.int(1)]), .list([.float(1)]), .list([.float(.nan)]), .list([]), .list([.int(1), .int(2)]),
            .list([.int(2), .int(1)]), .list([.list([.string("a")])]), .list([.set(RuleSet([.int(1)]))]),
            .map(.built([("a", .int(1)), ("b", .string("x"))])), .map(RuleMap.build([("b", .string("x")), ("a", .float(1))])),
            .map(.built([("a", .int(1))])), .map(.built([])), .map(.built([("a", .float(.nan))])),
            .map(.built([("b", .string("x")), ("a", .int(1))])),
            .map(.built([("é", .int(1))])), .map(.built([("e\u{301}", .int(1))])),
            .map(.document(fields(["a": .int(1), "b": .string("x")]))), .map(.document(fields(["a": .array([.int(1)])]))),
            .map(.built([("a", .list([.int(1)]))])),
        ]
        for n in 0...values.count {
            let members = Array(values.prefix(n))
            let m = RuleMembership(members)
            for v in values {
                let expected = members.contains { RuleValue.equal($0, v) }
                #expect(m.contains(v) == expected, "\(members.count) members, \(v.shortDescription) (\(v.typeName))")
            }
        }
        // A set keeps one of each equal value, in insertion order, and every NaN (also inside a list).
        let set = RuleSet([.int(1), .float(1), .float(.nan), .float(.nan), .string("a"), .string("a"),
                           .list([.float(.nan)]), .list([.float(.nan)]), .map(.built([("k", .int(2))])), .map(.built([("k", .float(2))]))])
        #expect(set.items.count == 7)
    }
}

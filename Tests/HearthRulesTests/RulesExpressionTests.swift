import HearthModel
import Testing
@testable import HearthRules

/// Each expression is the condition of `allow get` on /things/{id}, requested as things/t1 by alice with
/// the stored document `stored`; nil expects an evaluation error (a denial naming it).
@Suite("Rules: expressions")
struct RulesExpressionTests {
    static let stored: Value = [
        "name": "Alice Smith", "age": 42, "score": 2.5, "tags": ["a", "b", "c"], "owner": "alice",
        "address": ["city": "Paris", "zip": "75001"], "created": .timestamp(Timestamp(micros: 1_700_000_000_123_456)),
        "ref": .reference(doc("users/alice")), "nothing": nil, "flag": true,
        "where": .geoPoint(GeoPoint(latitude: 1.5, longitude: 2.5)), "blob": .bytes([1, 2, 3]),
    ]

    static func check(_ expr: String, _ expected: Bool?, newData: Value? = nil) {
        let source = """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /things/{id} {
                  allow get, update: if \(expr);
                }
              }
            }
            """
        let rules: Rules
        do { rules = try Rules.compile(source, file: "expr.rules") } catch {
            Issue.record("\(expr) did not compile: \(error)")
            return
        }
        let method: RuleMethod = newData == nil ? .get : .update
        let d = rules.evaluate(request(method, "things/t1", uid: "alice", token: ["email_verified": true, "admin": false],
                                       resource: stored, newData: newData), reader: NoDocumentReader())
        switch expected {
        case .some(let want):
            #expect(d.allowed == want, "\(expr): \(d.reason)")
            if !want { #expect(!d.reason.contains("error evaluating"), "\(expr) should be false, not an error: \(d.reason)") }
        case .none:
            #expect(!d.allowed && d.reason.contains("error evaluating"), "\(expr) should be an error: \(d.reason)")
        }
    }

    @Test("literals, operators and int/float arithmetic", arguments: [
        ("1 + 2 == 3", true), ("7 / 2 == 3", true), ("-7 / 2 == -3", true), ("7 % 3 == 1", true), ("7.0 / 2 == 3.5", true),
        ("1 == 1.0", true), ("1 < 1.5", true), ("2 * 3.0 == 6", true), ("'a' + 'b' == 'ab'", true), ("\"dq\" == 'dq'", true),
        ("[1, 2] + [3] == [1, 2, 3]", true), ("{'a': 1} == {'a': 1.0}", true), ("{'a': 1, 'b': 2} == {'b': 2, 'a': 1}", true),
        ("null == null", true), ("1 == '1'", false), ("!(1 == 2)", true), ("-(3) == -3", true), ("1 / 0 == 1", nil),
        ("9223372036854775807 + 1 > 0", nil), ("'a' < 1", nil), ("'abc' < 'abd'", true), ("true ? 1 == 1 : false", true),
        ("false ? true : 2 > 1", true), ("1 in [1, 2]", true), ("3 in [1, 2]", false), ("'a' in {'a': 1}", true),
        ("0x10 == 16", true), ("1e3 == 1000", true), ("'\\u00e9' == 'é'", true), ("'it\\'s' == \"it's\"", true),
        ("1 + 'a' == 1", nil), ("!1", nil), ("1", nil),
    ] as [(String, Bool?)])
    func operators(_ expr: String, _ expected: Bool?) { Self.check(expr, expected) }

    @Test("logical operators absorb errors when the other side decides", arguments: [
        ("resource.data.missing == 1 || true", true), ("true || resource.data.missing == 1", true),
        ("resource.data.missing == 1 && false", false), ("false && resource.data.missing", false),
        ("resource.data.missing == 1 || false", nil), ("resource.data.missing == 1 && true", nil),
    ] as [(String, Bool?)])
    func errorAbsorption(_ expr: String, _ expected: Bool?) { Self.check(expr, expected) }

    @Test("request, resource and path variables", arguments: [
        ("request.auth.uid == 'alice'", true), ("request.auth.token.email_verified", true),
        ("request.auth.token.admin == false", true), ("request.auth != null", true), ("request.method == 'get'", true),
        ("request.path == /databases/(default)/documents/things/t1", true),
        ("request.path == /databases/$(database)/documents/things/$(id)", true),
        ("resource.id == 't1' && id == 't1'", true), ("resource.__name__ == /databases/$(database)/documents/things/t1", true),
        ("resource.data.owner == request.auth.uid", true), ("resource.data.address.city == 'Paris'", true),
        ("resource.data['address']['zip'] == '75001'", true), ("resource.data.ref == /databases/$(database)/documents/users/alice", true),
        ("request.time > resource.data.created", true), ("database == '(default)'", true),
        ("request.resource == null", true), ("request.resource.data.x == 1", nil), ("request.query.limit == 1", nil),
        ("resource.data.nothing == null", true), ("resource.data.nothing.x == 1", nil),
    ] as [(String, Bool?)])
    func requestAndResource(_ expr: String, _ expected: Bool?) { Self.check(expr, expected) }

    @Test("type checks with is", arguments: [
        ("resource.data.name is string", true), ("resource.data.age is int", true), ("resource.data.age is number", true),
        ("resource.data.score is float", true), ("resource.data.score is int", false), ("resource.data.flag is bool", true),
        ("resource.data.nothing is null", true), ("resource.data.tags is list", true), ("resource.data.address is map", true),
        ("resource.data.created is timestamp", true), ("resource.data.ref is path", true), ("resource.data.where is latlng", true),
        ("resource.data.blob is bytes", true), ("duration.value(1, 'h') is duration", true), ("[1].toSet() is set", true),
        ("resource.data.name is int", false),
    ] as [(String, Bool?)])
    func types(_ expr: String, _ expected: Bool?) { Self.check(expr, expected) }

    @Test("string methods", arguments: [
        ("resource.data.name.size() == 11", true), ("'héllo'.size() == 5", true), ("resource.data.name.lower() == 'alice smith'", true),
        ("resource.data.name.upper() == 'ALICE SMITH'", true), ("resource.data.name.matches('Alice.*')", true),
        ("resource.data.name.matches('Alice')", false), ("resource.data.name.matches('[A-Z][a-z]+ [A-Z][a-z]+')", true),
        ("'a,b,c'.split(',') == ['a', 'b', 'c']", true), ("'  x '.trim() == 'x'", true),
        ("'aaa'.replace('a', 'b') == 'bbb'", true), ("'john.doe'.replace('(\\\\w+)\\\\.(\\\\w+)', '\\\\2 \\\\1') == 'doe john'", true),
        ("'ab'.toUtf8().size() == 2", true), ("'abc'[1:] == 'bc'", true), ("resource.data.age.size() == 1", nil),
        ("'a'.matches(request.auth.uid)", false), ("string(12) == '12' && string(true) == 'true'", true),
        ("int('42') == 42 && int(2.9) == 2 && float(1) == 1.0 && float('2.5') == 2.5", true), ("int('x') == 1", nil),
        // RE2, as Firestore: full matches, splits at non-empty matches (UTF-8 kept whole), \\N rewrites.
        ("'é-ü'.split('-') == ['é', 'ü']", true), ("'aXbXXc'.split('X+') == ['a', 'b', 'c']", true),
        ("'abc'.split('x*') == ['abc']", true), ("'a,b,'.split(',') == ['a', 'b', '']", true),
        ("'abc'.replace('x*', '-') == '-a-b-c-'", true), ("'a.b'.replace('[.]', '\\\\\\\\') == 'a\\\\b'", true),
        ("'ab'.replace('(a)', '\\\\2') == 'x'", nil),                     // no group 2: an evaluation error
        ("'aa'.matches('(a)' + '\\\\1')", nil),                             // backreferences are not RE2
        ("'éé'.matches('.{2}')", true), ("'x'.matches('(?i)X')", true),
        ("'José'.matches('\\\\w+')", false), ("'Jose'.matches('\\\\w+')", true),     // \w is ASCII in RE2
        ("'a'.split('(?=a)') == ['a']", nil), ("'a'.replace('\\\\C', 'b') == 'b'", nil),   // refused at run time
    ] as [(String, Bool?)])
    func strings(_ expr: String, _ expected: Bool?) { Self.check(expr, expected) }

    /// Matching takes time linear in the text: a crafted string that made a backtracking engine take seconds
    /// on an e-mail pattern (here 1 MiB of it) is answered at once. The pattern is a constant, compiled with
    /// the rules.
    @Test func matchingIsLinearInTheText() {
        var data = Self.stored.mapValue!
        data["email"] = .string("a@" + String(repeating: ".", count: 1 << 20) + "@")
        Self.check("request.resource.data.email.matches('[^@]+@[^@]+[.][^@]+')", false, newData: .map(data))
        data["email"] = .string("ada@example.org")
        Self.check("request.resource.data.email.matches('[^@]+@[^@]+[.][^@]+')", true, newData: .map(data))
    }

    @Test("list, set and map methods", arguments: [
        ("resource.data.tags.size() == 3", true), ("resource.data.tags.hasAll(['a', 'c'])", true), ("resource.data.tags.hasAll(['a', 'z'])", false),
        ("resource.data.tags.hasAny(['z', 'c'])", true), ("resource.data.tags.hasOnly(['a', 'b', 'c', 'd'])", true),
        ("resource.data.tags.hasOnly(['a'])", false), ("resource.data.tags.join('-') == 'a-b-c'", true),
        ("resource.data.tags.concat(['d']).size() == 4", true), ("resource.data.tags.removeAll(['b']) == ['a', 'c']", true),
        ("resource.data.tags[0] == 'a'", true), ("resource.data.tags[1:3] == ['b', 'c']", true), ("resource.data.tags[5] == 'a'", nil),
        ("[1, 1, 2].toSet().size() == 2", true), ("[1, 2].toSet() == [2, 1].toSet()", true), ("1 in [1, 2].toSet()", true),
        ("[1, 2, 3].toSet().difference([2].toSet()) == [1, 3].toSet()", true),
        ("[1, 2].toSet().intersection([2, 3].toSet()) == [2].toSet()", true), ("[1].toSet().union([2].toSet()).size() == 2", true),
        ("resource.data.address.size() == 2", true), ("resource.data.address.keys().hasAll(['city', 'zip'])", true),
        ("resource.data.address.values().hasAny(['Paris'])", true), ("resource.data.get('missing', 7) == 7", true),
        ("resource.data.get('age', 0) == 42", true), ("resource.data.get(['address', 'city'], '') == 'Paris'", true),
        ("resource.data.get(['address', 'nope'], 'x') == 'x'", true), ("'city' in resource.data.address", true),
        ("resource.data.keys().size() == 12", true),
        // Membership follows rules equality: an int equals the float of its value; strings compare byte for byte
        // (a precomposed é is not e + combining accent); values of different kinds never meet.
        ("[1, 1.0, 2].toSet().size() == 2", true), ("[1.0].toSet().hasAll([1])", true), ("[1].hasOnly([1.0, 'x'])", true),
        ("['\u{e9}', 'e\u{301}'].toSet().size() == 2", true), ("['\u{e9}'].hasAny(['e\u{301}'])", false),
        ("['1', 1, true, null].toSet().size() == 4", true), ("['a', 1, [1], {'k': 1}].removeAll([1.0, [1], {'k': 1}]) == ['a']", true),
        ("[[1, 2], {'a': 'b'}].toSet().hasAll([[1.0, 2], {'a': 'b'}])", true), ("[[1, 2]].toSet().hasAny([[2, 1]])", false),
        ("['a', 'b'].toSet().union(['b', 'c'].toSet()) == ['a', 'b', 'c'].toSet()", true),
    ] as [(String, Bool?)])
    func collections(_ expr: String, _ expected: Bool?) { Self.check(expr, expected) }

    /// Membership over many keys is exact (it is hashed for strings: `affectedKeys().hasOnly` over a write of
    /// 20,000 fields used to take 3 s on the loop).
    @Test func membershipOverManyKeys() {
        var after = Self.stored.mapValue!
        for i in 0..<20_000 { after["k\(i)"] = .int(Int64(i)) }
        let allowed = (0..<20_000).map { "'k\($0)'" }.joined(separator: ", ")
        Self.check("request.resource.data.diff(resource.data).affectedKeys().hasOnly([\(allowed)])", true, newData: .map(after))
        Self.check("request.resource.data.diff(resource.data).affectedKeys().hasOnly([\(allowed), 'name'])", true, newData: .map(after))
        after["name"] = "Bob"
        Self.check("request.resource.data.diff(resource.data).affectedKeys().hasOnly([\(allowed)])", false, newData: .map(after))
        Self.check("request.resource.data.diff(resource.data).addedKeys().size() == 20000", true, newData: .map(after))
    }

    @Test("map diff on update", arguments: [
        ("request.resource.data.diff(resource.data).affectedKeys().hasOnly(['name', 'extra', 'score'])", true),
        ("request.resource.data.diff(resource.data).affectedKeys() == ['name', 'extra', 'score'].toSet()", true),
        ("request.resource.data.diff(resource.data).addedKeys() == ['extra'].toSet()", true),
        ("request.resource.data.diff(resource.data).removedKeys() == ['score'].toSet()", true),
        ("request.resource.data.diff(resource.data).changedKeys() == ['name'].toSet()", true),
        ("request.resource.data.diff(resource.data).unchangedKeys().hasAll(['age', 'owner'])", true),
        ("request.resource.data.diff(resource.data).affectedKeys().hasOnly(['name'])", false),
    ] as [(String, Bool?)])
    func diff(_ expr: String, _ expected: Bool?) {
        var after = Self.stored.mapValue!
        after["name"] = "Bob"
        after["extra"] = 1
        after["score"] = nil
        Self.check(expr, expected, newData: .map(after))
    }

    @Test("timestamps, durations and math", arguments: [
        ("timestamp.date(2026, 1, 1) == request.time", true), ("timestamp.value(1767225600000) == request.time", true),
        ("request.time.toMillis() == 1767225600000", true), ("request.time.year() == 2026 && request.time.month() == 1", true),
        ("request.time.day() == 1 && request.time.dayOfWeek() == 4 && request.time.dayOfYear() == 1", true),
        ("(request.time + duration.value(90, 'm')).hours() == 1", true),
        ("(request.time + duration.value(90, 'm')).minutes() == 30", true),
        ("request.time - duration.value(1, 'd') < request.time", true),
        ("request.time - timestamp.date(2025, 12, 31) == duration.value(1, 'd')", true),
        ("duration.time(1, 2, 3, 4) == duration.value(3723000000004, 'ns')", true), ("duration.value(2, 's').seconds() == 2", true),
        ("resource.data.created.nanos() == 123456000", true), ("resource.data.created.date() < resource.data.created", true),
        ("timestamp.date(2026, 2, 30) == request.time", nil), ("duration.value(1, 'y') is duration", nil),
        ("math.abs(-3) == 3 && math.abs(-2.5) == 2.5", true), ("math.ceil(2.1) == 3 && math.floor(2.9) == 2", true),
        ("math.round(2.5) == 3.0 && math.sqrt(16) == 4", true), ("math.pow(2, 10) == 1024", true), ("math.isNaN(0.0 / 0.0)", true),
        ("latlng.value(1.5, 2.5) == resource.data.where", true),
    ] as [(String, Bool?)])
    func time(_ expr: String, _ expected: Bool?) { Self.check(expr, expected) }
}

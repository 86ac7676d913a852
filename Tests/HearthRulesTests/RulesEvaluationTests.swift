import HearthModel
import Testing
@testable import HearthRules

@Suite("Rules: allow and deny")
struct RulesEvaluationTests {
    static let userRules = compileRules("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /users/{userId} {
              allow read: if request.auth != null && request.auth.uid == userId;
              allow create: if request.auth.uid == userId && request.resource.data.keys().hasOnly(['name', 'age']);
              allow update: if request.auth.uid == userId
                && request.resource.data.diff(resource.data).affectedKeys().hasOnly(['name']);
              allow delete: if false;
            }
          }
        }
        """)

    @Test("Firestore's per-user example, method by method", arguments: [
        (request(.get, "users/alice", uid: "alice", resource: ["name": "A"]), true),
        (request(.get, "users/alice", uid: "bob", resource: ["name": "A"]), false),
        (request(.get, "users/alice"), false),
        (request(.create, "users/alice", uid: "alice", newData: ["name": "A", "age": 3]), true),
        (request(.create, "users/alice", uid: "alice", newData: ["name": "A", "admin": true]), false),
        (request(.create, "users/alice", uid: "bob", newData: ["name": "A"]), false),
        (request(.update, "users/alice", uid: "alice", resource: ["name": "A", "age": 3], newData: ["name": "B", "age": 3]), true),
        (request(.update, "users/alice", uid: "alice", resource: ["name": "A", "age": 3], newData: ["name": "A", "age": 4]), false),
        (request(.update, "users/alice", uid: "alice", resource: ["name": "A"], newData: ["name": "A", "role": "admin"]), false),
        (request(.delete, "users/alice", uid: "alice", resource: ["name": "A"]), false),
        (request(.get, "users/alice/private/x", uid: "alice"), false),
        (request(.get, "other/alice", uid: "alice"), false),
    ] as [(RuleRequest, Bool)])
    func perUser(_ req: RuleRequest, _ allowed: Bool) {
        let d = Self.userRules.evaluate(req, reader: NoDocumentReader())
        #expect(d.allowed == allowed, "\(req.method) \(req.path!): \(d.reason)")
    }

    @Test("denial reasons name the path, the false conditions, or the first error")
    func reasons() {
        let none = Self.userRules.evaluate(request(.get, "other/x", uid: "a"), reader: NoDocumentReader())
        #expect(none.reason == "no rule allows get on /databases/(default)/documents/other/x")
        let falseOne = Self.userRules.evaluate(request(.get, "users/x", uid: "a"), reader: NoDocumentReader())
        #expect(falseOne.reason == "no rule allows get on /databases/(default)/documents/users/x: the condition is false at test.rules:5:7")
        let error = Self.userRules.evaluate(request(.create, "users/x"), reader: NoDocumentReader())
        #expect(error.reason == "test.rules:6:37: error evaluating the condition: request.auth is null (the request is not authenticated), so it has no uid (denied)")
        let allowed = Self.userRules.evaluate(request(.get, "users/x", uid: "x"), reader: NoDocumentReader())
        #expect(allowed.allowed && allowed.reason == "allowed by test.rules:5:7")
    }

    static let overlapping = compileRules("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /cities/{city} {
              allow read: if false;
              allow write: if request.auth.uid == 'admin';
            }
            match /cities/{document=**} {
              allow read: if true;
            }
            match /cities/{city}/landmarks/{landmark} {
              allow read: if city == 'SF';
              allow create, update: if landmark.size() < 5;
            }
            match /{path=**}/landmarks/{l} {
              allow delete: if path == /cities/LA;
            }
          }
        }
        """)

    @Test("overlapping matches: any allowing statement wins; recursive wildcards match any depth", arguments: [
        (request(.get, "cities/SF"), true),                       // the {document=**} match allows
        (request(.get, "cities/SF/landmarks/x/deep/y"), true),    // recursive wildcard, deep
        (request(.update, "cities/SF", uid: "bob"), false),
        (request(.update, "cities/SF", uid: "admin"), true),
        (request(.create, "cities/SF/landmarks/abcd"), true),
        (request(.create, "cities/SF/landmarks/abcdef"), false),
        (request(.delete, "cities/LA/landmarks/x"), true),        // {path=**} binds the path cities/LA
        (request(.delete, "cities/SF/landmarks/x"), false),
        (request(.delete, "landmarks/x"), false),                  // zero segments: path is the empty path
    ] as [(RuleRequest, Bool)])
    func overlappingMatches(_ req: RuleRequest, _ allowed: Bool) {
        let d = Self.overlapping.evaluate(req, reader: NoDocumentReader())
        #expect(d.allowed == allowed, "\(req.method) \(req.path!): \(d.reason)")
    }

    @Test("rules_version '1': {x=**} needs at least one segment")
    func versionOne() {
        let v1 = compileRules("""
            service cloud.firestore {
              match /databases/{database}/documents {
                match /a/{rest=**} { allow read: if true; }
              }
            }
            """)
        #expect(v1.evaluate(request(.get, "a/b"), reader: NoDocumentReader()).allowed)
        #expect(v1.evaluate(request(.get, "a/b/c/d"), reader: NoDocumentReader()).allowed)
        let v2 = compileRules("""
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /a/b/{rest=**} { allow get: if string(rest) == '/'; }
                match /{p=**} { allow get: if p == /a/b; }
              }
            }
            """)
        #expect(v2.evaluate(request(.get, "a/b"), reader: NoDocumentReader()).allowed)
        #expect(!v2.evaluate(request(.get, "a/c"), reader: NoDocumentReader()).allowed)
    }

    static let functions = compileRules("""
        rules_version = '2';
        service cloud.firestore {
          function signedIn() { return request.auth != null; }
          match /databases/{database}/documents {
            function isOwner(rsc) {
              let owner = rsc.data.owner;
              let me = request.auth.uid;
              return signedIn() && owner == me;
            }
            function userDoc() { return get(/databases/$(database)/documents/users/$(request.auth.uid)); }
            function isAdmin() { return userDoc().data.role == 'admin'; }
            match /posts/{post} {
              allow read: if isOwner(resource) || isAdmin();
              allow update: if isOwner(resource) && isOwner(request.resource);
            }
          }
        }
        """)

    @Test("functions with lets, calling functions, reading documents")
    func functionCalls() {
        let reader = FakeReader(before: ["users/root": ["role": "admin"], "users/bob": ["role": "user"]])
        func check(_ r: RuleRequest) -> RuleDecision { Self.functions.evaluate(r, reader: reader) }
        #expect(check(request(.get, "posts/p", uid: "bob", resource: ["owner": "bob"])).allowed)
        #expect(!check(request(.get, "posts/p", uid: "bob", resource: ["owner": "eve"])).allowed)
        let admin = check(request(.get, "posts/p", uid: "root", resource: ["owner": "eve"]))
        #expect(admin.allowed)
        #expect(admin.reads == [doc("users/root")])
        #expect(check(request(.update, "posts/p", uid: "bob", resource: ["owner": "bob"], newData: ["owner": "bob", "t": 1])).allowed)
        #expect(!check(request(.update, "posts/p", uid: "bob", resource: ["owner": "bob"], newData: ["owner": "eve"])).allowed)
        // A missing user document: get() is null, .data is an error; the first error is the denial reason.
        let ghost = check(request(.get, "posts/p", uid: "ghost", resource: ["owner": "eve"]))
        #expect(!ghost.allowed)
        #expect(ghost.reason.contains("cannot read 'data' of null"), "\(ghost.reason)")
        #expect(ghost.reads == [doc("users/ghost")])
    }

    @Test("get, getAfter, exists, existsAfter and the read budget")
    func documentReads() {
        let rules = compileRules("""
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /departments/{d}/members/{uid} {
                  // A membership may be created only together with the department's memberCount + 1.
                  allow create: if getAfter(/databases/$(database)/documents/departments/$(d)).data.memberCount
                      == get(/databases/$(database)/documents/departments/$(d)).data.memberCount + 1;
                  allow delete: if !existsAfter(/databases/$(database)/documents/departments/$(d)/members/$(uid));
                  allow get: if exists(/databases/$(database)/documents/departments/$(d)/members/$(request.auth.uid));
                }
                match /chain/{n} {
                  allow get: if exists(/databases/$(database)/documents/a/1) && exists(/databases/$(database)/documents/a/2)
                    && exists(/databases/$(database)/documents/a/1) && exists(/databases/$(database)/documents/a/3);
                }
              }
            }
            """)
        let before: [String: Value] = ["departments/d1": ["memberCount": 2], "departments/d1/members/ann": [:],
                                        "a/1": [:], "a/2": [:], "a/3": [:]]
        var after = before
        after["departments/d1"] = ["memberCount": 3]
        after["departments/d1/members/bo"] = [:]
        let commit = FakeReader(before: before, after: after)
        let create = rules.evaluate(request(.create, "departments/d1/members/bo", uid: "bo", newData: [:]), reader: commit)
        #expect(create.allowed, "\(create.reason)")
        #expect(create.reads == [doc("departments/d1")])
        let unchanged = FakeReader(before: before)
        #expect(!rules.evaluate(request(.create, "departments/d1/members/bo", uid: "bo", newData: [:]), reader: unchanged).allowed)
        #expect(rules.evaluate(request(.delete, "departments/d1/members/zed"), reader: unchanged).allowed)
        #expect(!rules.evaluate(request(.delete, "departments/d1/members/ann"), reader: unchanged).allowed)
        #expect(rules.evaluate(request(.get, "departments/d1/members/x", uid: "ann"), reader: unchanged).allowed)
        #expect(!rules.evaluate(request(.get, "departments/d1/members/x", uid: "bob"), reader: unchanged).allowed)
        // Distinct documents count once: a/1 twice, a/2, a/3 is three reads.
        let three = rules.evaluate(request(.get, "chain/1", budget: 3), reader: unchanged)
        #expect(three.allowed, "\(three.reason)")
        #expect(three.reads == [doc("a/1"), doc("a/2"), doc("a/3")])
        let over = rules.evaluate(request(.get, "chain/1", budget: 2), reader: unchanged)
        #expect(!over.allowed)
        #expect(over.reason.contains("exceeds the limit of 2 document reads"), "\(over.reason)")
    }

    @Test("an error denies only its own allow statement")
    func errorsAreLocal() {
        let rules = compileRules("""
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                match /t/{id} {
                  allow get: if resource.data.missing == 1;
                  allow get: if resource.data.n / 0 == 1;
                  allow get: if resource.data.n == 1;
                }
              }
            }
            """)
        #expect(rules.evaluate(request(.get, "t/x", resource: ["n": 1]), reader: NoDocumentReader()).allowed)
        let denied = rules.evaluate(request(.get, "t/x", resource: ["n": 2]), reader: NoDocumentReader())
        #expect(denied.reason == "test.rules:5:35: error evaluating the condition: map has no field 'missing' (denied)")
        let absent = rules.evaluate(request(.get, "t/x"), reader: NoDocumentReader())
        #expect(absent.reason.contains("resource is null"), "\(absent.reason)")
    }

    @Test("no rules, and empty match blocks, deny")
    func noRules() {
        let rules = compileRules("service cloud.firestore { match /databases/{db}/documents { match /a/{b} { } } }")
        #expect(!rules.evaluate(request(.get, "a/b"), reader: NoDocumentReader()).allowed)
        #expect(rules.ruleCount == 0)
        let unconditional = compileRules("service cloud.firestore { match /databases/{db}/documents { match /a/{b} { allow read; allow write } } }")
        #expect(unconditional.evaluate(request(.get, "a/b"), reader: NoDocumentReader()).allowed)
        #expect(unconditional.evaluate(request(.delete, "a/b"), reader: NoDocumentReader()).allowed)
        #expect(unconditional.ruleCount == 2)
    }
}

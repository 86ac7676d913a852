import HearthModel
@testable import HearthRules
import Testing

/// `Rules.readsResource`: which methods may need the stored document, so the server decodes it only then.
@Suite struct ReadsResourceTests {
    static func rules(_ body: String) throws -> Rules {
        try Rules.compile("rules_version = '2';\nservice cloud.firestore {\n  match /databases/{database}/documents {\n\(body)\n  }\n}\n", file: "t.rules")
    }

    @Test func onlyMethodsWhoseConditionsReadResource() throws {
        let r = try Self.rules("""
            match /a/{id} {
              allow get: if request.auth.uid == id;
              allow list: if resource.data.owner == request.auth.uid;
              allow create: if request.resource.data.owner == request.auth.uid;
              allow update: if resource.data.keys().hasAll(['x']);
            }
        """)
        #expect(r.readsResource(.get) == false)
        #expect(r.readsResource(.list) == true)
        #expect(r.readsResource(.create) == false, "request.resource is not resource")
        #expect(r.readsResource(.update) == true, "resource.data as a method's receiver")
        #expect(r.readsResource(.delete) == false)
    }

    @Test func throughFunctionsTransitivelyAndThroughLets() throws {
        let r = try Self.rules("""
            function owner() { return resource.data.owner; }
            function isOwner() { return owner() == request.auth.uid; }
            function viaLet() { let d = resource; return d != null; }
            match /a/{id} {
              allow get: if isOwner();
              allow delete: if viaLet();
              allow create: if request.auth != null;
            }
        """)
        #expect(r.readsResource(.get))
        #expect(r.readsResource(.delete))
        #expect(!r.readsResource(.create))
        #expect(!r.readsResource(.update))
    }

    @Test func resourceNullChecksCount() throws {
        let r = try Self.rules("match /a/{id} { allow read: if resource == null; }")
        #expect(r.readsResource(.get) && r.readsResource(.list))
    }
}

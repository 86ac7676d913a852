import Foundation
import HearthTesting
import Testing

extension ClusterSuites {

    /// Rules on three nodes: a follower forwards each client's write to the committer naming the client's
    /// identity (`forward`, on a link opened with the cluster's admin key), so the committer judges it as that
    /// client, never as the follower; without the admin key a follower refuses writes rather than forward them
    /// unjudged, and a request cannot claim an identity by sending `forward` itself.
    @Suite(.serialized) struct ClusterRulesTests {
        static let rules = """
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /notes/{uid}/items/{id} {
              allow read, write: if request.auth != null && request.auth.uid == uid;
            }
          }
        }
        """

        @Test func aFollowerForwardsWritesAsItsClientAndTheCommitterJudgesThem() throws {
            let mint = try TokenMint()
            defer { mint.cleanUp() }
            let rules = mint.dir + "/rules", key = mint.dir + "/admin.key"
            try Self.rules.write(toFile: rules, atomically: true, encoding: .utf8)
            try String(repeating: "k", count: 40).write(toFile: key, atomically: true, encoding: .utf8)
            let c = try ClusterNodes(extraArgs: ["--rules", rules, "--auth-secret-file", mint.secretFile, "--admin-key-file", key])
            let k = try c.committer()
            let follower = try c[(k + 1) % 3].connect()
            #expect(try follower.call(["op": "hello", "token": try mint.hs256(TokenMint.claims("alice"))]).isOK)
            let mine = try follower.request(#"{"op":"set","id":1,"path":"notes/alice/items/a","data":{"t":"hi"}}"#)
            #expect(mine.isOK, "\(mine)")
            let theirs = try follower.request(#"{"op":"set","id":2,"path":"notes/bob/items/a","data":{"t":"hi"}}"#)
            #expect(theirs.errorCode == "PERMISSION_DENIED", "\(theirs)")
            #expect(theirs["id"] as? Int == 2)
            let read = try follower.request(#"{"op":"get","path":"notes/alice/items/a"}"#)
            #expect(((read["doc"] as? [String: Any])?["data"] as? [String: Any])?["t"] as? String == "hi", "\(read)")
            // Anonymous through a follower: judged as anonymous.
            let anonymous = try c[(k + 2) % 3].connect()
            #expect(try anonymous.request(#"{"op":"set","path":"notes/alice/items/b","data":{}}"#).errorCode == "PERMISSION_DENIED")
            // A client cannot speak for someone else with forward: it is the admin's.
            let forged = try anonymous.request(#"{"op":"forward","as":"admin","request":"{\"op\":\"set\",\"path\":\"notes/bob/items/x\",\"data\":{}}"}"#)
            #expect(forged.errorCode == "PERMISSION_DENIED", "\(forged)")
            #expect(try c[k].connect().request(#"{"op":"get","path":"notes/bob/items/x"}"#).errorCode == "PERMISSION_DENIED")
        }

        @Test func withoutTheAdminKeyAFollowerRefusesWritesUnderRules() throws {
            let mint = try TokenMint()
            defer { mint.cleanUp() }
            let rules = mint.dir + "/rules"
            try Self.rules.write(toFile: rules, atomically: true, encoding: .utf8)
            let c = try ClusterNodes(extraArgs: ["--rules", rules, "--auth-secret-file", mint.secretFile])
            let k = try c.committer()
            let follower = try c[(k + 1) % 3].connect()
            #expect(try follower.call(["op": "hello", "token": try mint.hs256(TokenMint.claims("alice"))]).isOK)
            let refused = try follower.request(#"{"op":"set","path":"notes/alice/items/a","data":{}}"#)
            #expect(refused.errorCode == "FAILED_PRECONDITION" && refused.errorMessage?.contains("--admin-key-file") == true, "\(refused)")
            // On the committer the same write is judged and runs.
            let direct = try c[k].connect()
            #expect(try direct.call(["op": "hello", "token": try mint.hs256(TokenMint.claims("alice"))]).isOK)
            #expect(try direct.request(#"{"op":"set","path":"notes/alice/items/a","data":{}}"#).isOK)
        }
    }
}

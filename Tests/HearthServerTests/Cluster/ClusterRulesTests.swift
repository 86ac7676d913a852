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

        /// Three nodes enforcing `rules`, with tokens from `mint` and the cluster's admin key (for `forward`).
        static func nodesWithRules(_ mint: TokenMint) throws -> ClusterNodes {
            let rules = mint.dir + "/rules", key = mint.dir + "/admin.key"
            try Self.rules.write(toFile: rules, atomically: true, encoding: .utf8)
            try String(repeating: "k", count: 40).write(toFile: key, atomically: true, encoding: .utf8)
            return try ClusterNodes(extraArgs: ["--rules", rules, "--auth-secret-file", mint.secretFile, "--admin-key-file", key])
        }

        @Test func aFollowerForwardsWritesAsItsClientAndTheCommitterJudgesThem() throws {
            let mint = try TokenMint()
            defer { mint.cleanUp() }
            let c = try Self.nodesWithRules(mint)
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

        /// A write a follower forwards and the committer refuses (here: an update of what another client just
        /// deleted through the committer) is answered once the follower has published the seq the refusal was
        /// decided at: the client's get behind it, answered by the follower from its cache, does not still find
        /// the document the refusal found gone. Twenty rounds, each document cached on the follower first.
        @Test func aRefusalThroughAFollowerIsAnsweredOnceTheFollowerHasPublishedWhatItSaw() throws {
            let c = try ClusterNodes()
            let k = try c.committer()
            let direct = try c[k].connect(), follower = try c[(k + 1) % 3].connect()
            let n = 20
            #expect(try direct.request(#"{"op":"commit","writes":[\#((0..<n).map { #"{"op":"set","path":"race/d\#($0)","data":{"v":0}}"# }.joined(separator: ","))]}"#).isOK)
            for i in 0..<n {
                // Through the follower, until it has published the set (and so caches the document).
                var seen = false
                for _ in 0..<200 where !seen {
                    seen = try follower.request(#"{"op":"get","path":"race/d\#(i)"}"#)["doc"] is [String: Any]
                }
                #expect(seen)
            }
            var refused = 0
            for i in 0..<n {
                try direct.send(#"{"op":"delete","path":"race/d\#(i)","id":"d"}"#)
                try follower.send(#"{"op":"update","path":"race/d\#(i)","data":{"v":1},"id":"u"}"#)
                try follower.send(#"{"op":"get","path":"race/d\#(i)","id":"g"}"#)
                _ = try direct.readObject()
                let update = try follower.readObject(), get = try follower.readObject()
                #expect(update["id"] as? String == "u" && get["id"] as? String == "g")
                guard update.errorCode == "NOT_FOUND" else { #expect(update.isOK, "\(update)"); continue }
                refused += 1
                #expect(get["doc"] is NSNull, "round \(i): the update was refused (\(update)), then the get found \(get)")
            }
            #expect(refused > 0, "no update was refused: the race was never run")
        }

        /// A `requestId` is scoped to its sender's identity on every node: a follower forwards it with the
        /// client's identity, so a retry through another node is the same write (a duplicate), while another
        /// identity naming the same ID, through any node, gets its own write judged, never the first one's answer.
        @Test func requestIDsStayWithinTheirSendersIdentityThroughFollowers() throws {
            let mint = try TokenMint()
            defer { mint.cleanUp() }
            let c = try Self.nodesWithRules(mint)
            let k = try c.committer()
            func client(_ node: Int, _ uid: String) throws -> WireClient {
                let w = try c[node].connect()
                #expect(try w.call(["op": "hello", "token": try mint.hs256(TokenMint.claims(uid))]).isOK)
                return w
            }
            let aliceViaFollower = try client((k + 1) % 3, "alice"), aliceViaOther = try client((k + 2) % 3, "alice")
            let bobViaFollower = try client((k + 1) % 3, "bob"), bobViaCommitter = try client(k, "bob")
            let rid = "r-\(UUID().uuidString)"
            let increment = #"{"op":"update","requestId":"\#(rid)","path":"notes/alice/items/n","data":{"n":{"$increment":5}}}"#
            #expect(try aliceViaFollower.request(#"{"op":"set","path":"notes/alice/items/n","data":{"n":0}}"#).isOK)
            let first = try aliceViaFollower.request(increment)
            #expect(first.isOK && first["duplicate"] == nil, "\(first)")
            // Alice's retry through another follower is the same write.
            let retry = try aliceViaOther.request(increment)
            #expect(retry["duplicate"] as? Bool == true && retry["seq"] as? Int == first["seq"] as? Int, "\(retry)")
            // Bob naming alice's ID, through a follower or on the committer, is judged as bob: denied.
            for bob in [bobViaFollower, bobViaCommitter] {
                let denied = try bob.request(increment)
                #expect(denied.errorCode == "PERMISSION_DENIED" && denied["duplicate"] == nil, "\(denied)")
            }
            // Bob's own write with that ID is his, applied once.
            let his = try bobViaFollower.request(#"{"op":"set","requestId":"\#(rid)","path":"notes/bob/items/n","data":{"n":1}}"#)
            #expect(his.isOK && his["duplicate"] == nil && (his["seq"] as? Int ?? 0) > (first["seq"] as? Int ?? 0), "\(his)")
            let hisRetry = try bobViaCommitter.request(#"{"op":"set","requestId":"\#(rid)","path":"notes/bob/items/n","data":{"n":1}}"#)
            #expect(hisRetry["duplicate"] as? Bool == true && hisRetry["seq"] as? Int == his["seq"] as? Int, "\(hisRetry)")
            // The increment ran once.
            let n = try aliceViaOther.request(#"{"op":"get","path":"notes/alice/items/n"}"#)
            #expect(((n["doc"] as? [String: Any])?["data"] as? [String: Any])?["n"] as? Int == 5, "\(n)")
            // Anonymous clients cannot name writes while rules are enforced, on a follower either.
            let anonymous = try c[(k + 1) % 3].connect().request(#"{"op":"set","requestId":"\#(rid)","path":"notes/x/items/y","data":{}}"#)
            #expect(anonymous.errorCode == "UNAUTHENTICATED" && anonymous.errorMessage?.contains("requestId") == true, "\(anonymous)")
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

        static let membershipRules = """
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            match /teams/{t}/members/{u} { allow read: if request.auth != null && request.auth.uid == u; }
            match /teams/{t}/docs/{d} {
              allow read, write: if request.auth != null
                && exists(/databases/$(database)/documents/teams/$(t)/members/$(request.auth.uid));
            }
          }
        }
        """

        /// Rules that read a membership document (`exists()`), on every node: the document the rule reads is in
        /// no node's memory, so each node reads it from PostgreSQL on a reader thread and runs the request
        /// again (writes on the committer, gets and listens on a follower); removing the membership ends the
        /// listener on the follower, judged again the same way.
        @Test func rulesThatReadDocumentsAreJudgedOnEveryNode() throws {
            let mint = try TokenMint()
            defer { mint.cleanUp() }
            let rules = mint.dir + "/rules", key = mint.dir + "/admin.key"
            try Self.membershipRules.write(toFile: rules, atomically: true, encoding: .utf8)
            let adminKey = String(repeating: "k", count: 40)
            try adminKey.write(toFile: key, atomically: true, encoding: .utf8)
            let c = try ClusterNodes(extraArgs: ["--rules", rules, "--auth-secret-file", mint.secretFile, "--admin-key-file", key])
            let k = try c.committer()
            let admin = try c[k].connect()
            #expect(try admin.call(["op": "hello", "adminKey": adminKey]).isOK)
            #expect(try admin.request(#"{"op":"set","path":"teams/t1/members/alice","data":{}}"#).isOK)
            let loopReadsBefore = try (0..<3).map { try Self.loopReads(c[$0], adminKey) }
            let alice = try c[(k + 1) % 3].connect(), bob = try c[(k + 2) % 3].connect()
            #expect(try alice.call(["op": "hello", "token": try mint.hs256(TokenMint.claims("alice"))]).isOK)
            #expect(try bob.call(["op": "hello", "token": try mint.hs256(TokenMint.claims("bob"))]).isOK)
            let wrote = try alice.request(#"{"op":"set","path":"teams/t1/docs/a","data":{"t":"hi"}}"#)
            #expect(wrote.isOK, "\(wrote)")
            #expect(try bob.request(#"{"op":"set","path":"teams/t1/docs/b","data":{}}"#).errorCode == "PERMISSION_DENIED")
            // Twice: the first get reads the document on a reader, the second finds it cached and is judged
            // on the loop, which reads the membership on a reader first.
            for _ in 0..<2 {
                let read = try alice.request(#"{"op":"get","path":"teams/t1/docs/a"}"#)
                #expect(((read["doc"] as? [String: Any])?["data"] as? [String: Any])?["t"] as? String == "hi", "\(read)")
                #expect(try bob.request(#"{"op":"get","path":"teams/t1/docs/a"}"#).errorCode == "PERMISSION_DENIED")
            }
            let listen = try alice.request(#"{"op":"listen","path":"teams/t1/docs/a","id":"l"}"#)
            let sub = try #require(listen["sub"] as? String, "\(listen)")
            let first = try alice.readObject()
            #expect(first["sub"] as? String == sub && first["type"] as? String == "snapshot", "\(first)")
            #expect(try bob.request(#"{"op":"listen","path":"teams/t1/docs/a"}"#).errorCode == "PERMISSION_DENIED")
            // Alice leaves the team: her listener is judged again on its node and ends.
            #expect(try admin.request(#"{"op":"delete","path":"teams/t1/members/alice"}"#).isOK)
            let ended = try alice.readObject()
            #expect(ended["sub"] as? String == sub && ended["type"] as? String == "error", "\(ended)")
            #expect(((ended["error"] as? [String: Any])?["code"] as? String) == "PERMISSION_DENIED", "\(ended)")
            #expect(try alice.request(#"{"op":"ping"}"#).isOK)
            let loopReadsAfter = try (0..<3).map { try Self.loopReads(c[$0], adminKey) }
            #expect(loopReadsAfter == loopReadsBefore, "no node read PostgreSQL on its loop thread")
        }

        /// `stats`' count of store reads made on the node's loop thread.
        static func loopReads(_ node: DaemonProcess, _ adminKey: String) throws -> Int {
            let conn = try node.connect()
            _ = try conn.call(["op": "hello", "adminKey": adminKey])
            let stats = try conn.request(#"{"op":"stats"}"#)
            return try #require((stats["store"] as? [String: Any])?["loopReads"] as? Int, "\(stats)")
        }
    }
}

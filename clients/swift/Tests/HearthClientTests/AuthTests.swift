import Foundation
import HearthTesting
import Testing
@testable import HearthClient

/// Authentication against the scripted server: the exact hello line first on every connection (token,
/// admin key, token provider, token file), requests held until it is answered, the hello again on a
/// reconnect before listeners resume, a refused hello, and token refresh with `authenticate` on the live
/// connection (listeners stay).
@Suite struct AuthTests {
    static let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"
    static let later = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSIsIm4iOjJ9.c2lnMg"
    static let authOK = #""ok":true,"version":"0.1.0","seq":0,"history":"0000000000000001","auth":{"uid":"alice","admin":false,"expiresAt":1767225600}"#
    static let refusal = #""ok":false,"error":{"code":"UNAUTHENTICATED","message":"expired: token expired at 1767225600, now 1767229200 (clock skew 60 s)"}"#

    static func settings(_ credentials: HearthCredentials, heartbeat: Double = 0) -> HearthSettings {
        var s = HearthSettings()
        s.credentials = credentials
        s.heartbeatInterval = heartbeat
        return s
    }

    static func object(_ line: String) throws -> [String: Any] {
        guard let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { throw TestFailure("not an object: \(line)") }
        return o
    }

    @Test func theHelloGoesFirstAndRequestsWaitForItsAnswer() async throws {
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings(.token(Self.token)))
        defer { db.terminate() }
        // Callback forms send from this thread: the tests do not wait on the (possibly busy) task pool.
        let got = Recorder<DocumentSnapshot>()
        db.document("a/b").getDocument(completion: got.callback)
        let c = try await server.accept()
        let hello = try await c.readLine()
        #expect(hello == #"{"id":1,"op":"hello","token":"\#(Self.token)"}"#)
        // The get is held while the hello is unanswered.
        await #expect(throws: (any Error).self) { try await c.readLine(timeout: 0.3) }
        try c.reply(try Self.object(hello), Self.authOK)
        let get = try await c.readLine()
        #expect(get == #"{"id":2,"op":"get","path":"a/b"}"#)
        try c.reply(try Self.object(get), #""ok":true,"doc":null"#)
        #expect(try await got.wait(for: 1)[0].exists == false)
        #expect(db.identity == HearthIdentity(uid: "alice", isAdmin: false, expiresAt: Date(timeIntervalSince1970: 1767225600)))
    }

    @Test func adminKeyIsEscaped() async throws {
        let server = try FakeServer()
        let key = #"admin-key-0123456789abcdef-"quoted"-\back"#
        let db = Hearth(port: server.port, settings: Self.settings(.adminKey(key)))
        defer { db.terminate() }
        let got = Recorder<DocumentSnapshot>()
        db.document("a/b").getDocument(completion: got.callback)
        let c = try await server.accept()
        let hello = try await c.readLine()
        #expect(hello == #"{"adminKey":"admin-key-0123456789abcdef-\"quoted\"-\\back","id":1,"op":"hello"}"#)
        #expect(try Self.object(hello)["adminKey"] as? String == key)
        try c.reply(try Self.object(hello), #""ok":true,"auth":{"admin":true}"#)
        try c.reply(try await c.read(), #""ok":true,"doc":null"#)
        try await got.wait(for: 1)
        #expect(db.identity?.isAdmin == true && db.identity?.uid == nil)
    }

    @Test func anonymousSendsNoHello() async throws {
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings(.none))
        defer { db.terminate() }
        let got = Recorder<DocumentSnapshot>()
        db.document("a/b").getDocument(completion: got.callback)
        let c = try await server.accept()
        let line = try await c.readLine()
        #expect(line == #"{"id":1,"op":"get","path":"a/b"}"#)
        try c.reply(try Self.object(line), #""ok":true,"doc":null"#)
        try await got.wait(for: 1)
        #expect(db.identity == nil)
    }

    @Test func environmentFallback() throws {
        func resolve(_ env: [String: String]) -> String {
            switch HearthCredentials.environment.resolved(env) {
            case .success(.none): return "none"
            case .success(.token(let t)): return "token \(t)"
            case .success(.adminKey(let k)): return "adminKey \(k)"
            case .success: return "other"
            case .failure(let e): return "\(e)"
            }
        }
        #expect(resolve([:]) == "none")
        #expect(resolve(["HEARTH_TOKEN": "t"]) == "token t")
        #expect(resolve(["HEARTH_ADMIN_KEY": "k"]) == "adminKey k")
        #expect(resolve(["HEARTH_TOKEN": "", "HEARTH_ADMIN_KEY": "k"]) == "adminKey k")
        #expect(resolve(["HEARTH_TOKEN": "t", "HEARTH_ADMIN_KEY": "k"]).hasPrefix("INVALID_ARGUMENT: both HEARTH_TOKEN and HEARTH_ADMIN_KEY are set"))
    }

    @Test func theProviderIsAskedOnEveryConnectAndTheHelloPrecedesTheResumedListen() async throws {
        let server = try FakeServer()
        let calls = LockedValue(0)
        let provider: @Sendable () async throws -> String = {
            let n = calls.get() + 1
            calls.set(n)
            return n == 1 ? Self.token : Self.later
        }
        let db = Hearth(port: server.port, settings: Self.settings(.tokenProvider(provider), heartbeat: 5))
        defer { db.terminate() }
        let rec = Recorder<DocumentSnapshot>()
        let reg = db.document("c/d").addSnapshotListener(rec.callback)
        defer { reg.remove() }

        let c1 = try await server.accept()
        let hello1 = try await c1.readLine()
        // With a listener waiting, the hello also turns heartbeats on: one hello, not two.
        #expect(hello1 == #"{"heartbeatMs":5000,"id":1,"op":"hello","token":"\#(Self.token)"}"#)
        try c1.reply(try Self.object(hello1), Self.authOK)
        let listen1 = try Self.object(try await c1.readLine())
        #expect(listen1["op"] as? String == "listen")
        try c1.reply(listen1, #""ok":true,"sub":"1","history":"0000000000000001""#)
        try c1.send(#"{"sub":"1","type":"snapshot","seq":4,"initial":true,"doc":null}"#)
        try await rec.wait(for: 1)

        c1.close()
        let c2 = try await server.accept()
        let hello2 = try await c2.readLine()
        #expect(hello2 == #"{"heartbeatMs":5000,"id":3,"op":"hello","token":"\#(Self.later)"}"#)
        await #expect(throws: (any Error).self) { try await c2.readLine(timeout: 0.3) }
        try c2.reply(try Self.object(hello2), Self.authOK)
        let listen2 = try Self.object(try await c2.readLine())
        #expect(listen2["op"] as? String == "listen")
        #expect(listen2["resumeAfter"] as? Int == 4)
        #expect(calls.get() == 2)
    }

    @Test func aRefusedHelloFailsRequestsAndEndsListeners() async throws {
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings(.token(Self.token)))
        defer { db.terminate() }
        let rec = Recorder<DocumentSnapshot>()
        let reg = db.document("c/d").addSnapshotListener(rec.callback)
        defer { reg.remove() }
        let c = try await server.accept()
        let hello = try await c.readLine()
        // The callback form queues the request before returning, so it is held behind the hello.
        let got = Recorder<DocumentSnapshot>()
        db.document("c/d").getDocument(completion: got.callback)
        try c.reply(try Self.object(hello), Self.refusal)
        let refused = HearthError(.unauthenticated, "expired: token expired at 1767225600, now 1767229200 (clock skew 60 s)")
        #expect(try await rec.waitForError() as? HearthError == refused)
        #expect(try await got.waitForError() as? HearthError == refused)
        #expect(await server.staysQuiet(for: 0.3), "no reconnect after a refusal")
    }

    @Test func theProviderFailingIsUnauthenticated() async throws {
        struct Offline: Error {}
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings(.tokenProvider { throw Offline() }))
        defer { db.terminate() }
        let got = Recorder<DocumentSnapshot>()
        db.document("a/b").getDocument(completion: got.callback)
        let idle = try await server.accept()
        let e = try await got.waitForError() as? HearthError
        #expect(e?.code == .unauthenticated && e?.message.hasPrefix("the token provider failed") == true, "\(String(describing: e))")
        idle.close()
    }

    @Test func authenticateRefreshesOnTheLiveConnectionAndKeepsListeners() async throws {
        let server = try FakeServer()
        let db = Hearth(port: server.port, settings: Self.settings(.token(Self.token)))
        defer { db.terminate() }
        let rec = Recorder<DocumentSnapshot>()
        let reg = db.document("c/d").addSnapshotListener(rec.callback)
        defer { reg.remove() }
        let c = try await server.accept()
        try c.reply(try Self.object(try await c.readLine()), Self.authOK)
        let listen = try await c.read()
        try c.reply(listen, #""ok":true,"sub":"1""#)
        try c.send(#"{"sub":"1","type":"snapshot","seq":4,"initial":true,"doc":null}"#)
        try await rec.wait(for: 1)

        let refresh = Recorder<HearthIdentity>()
        db.authenticate(.token(Self.later), completion: refresh.callback)
        let hello = try await c.readLine()
        #expect(hello == #"{"id":3,"op":"hello","token":"\#(Self.later)"}"#)
        try c.reply(try Self.object(hello), Self.authOK.replacingOccurrences(of: "1767225600", with: "1767229200"))
        #expect(try await refresh.wait(for: 1)[0].expiresAt == Date(timeIntervalSince1970: 1767229200))
        #expect(db.identity?.expiresAt == Date(timeIntervalSince1970: 1767229200))
        // Same subscription: a push for sub 1 still arrives, and nothing else was sent.
        try c.send(#"{"sub":"1","type":"snapshot","seq":5,"doc":\#(fakeDoc("c/d", #"{"v":1}"#, updated: 5))}"#)
        let snaps = try await rec.wait(for: 2)
        #expect(snaps[1].get("v") as? Int == 1)

        // A refused refresh throws and keeps the accepted token for the next connection.
        let refused = Recorder<HearthIdentity>()
        db.authenticate(.token("bad.token.x"), completion: refused.callback)
        let bad = try await c.readLine()
        try c.reply(try Self.object(bad), Self.refusal)
        #expect((try await refused.waitForError() as? HearthError)?.code == .unauthenticated)
        c.close()
        let c2 = try await server.accept()
        #expect(try Self.object(try await c2.readLine())["token"] as? String == Self.later)
    }

    @Test func tokenFileIsReadOnEachConnect() async throws {
        let server = try FakeServer()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-token-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try (Self.token + "\r\n").write(toFile: path, atomically: true, encoding: .utf8)
        let db = Hearth(port: server.port, settings: Self.settings(.tokenFile(path)))
        defer { db.terminate() }
        let got = Recorder<DocumentSnapshot>()
        db.document("a/b").getDocument(completion: got.callback)
        let c = try await server.accept()
        let hello = try await c.readLine()
        #expect(hello == #"{"id":1,"op":"hello","token":"\#(Self.token)"}"#)
        try c.reply(try Self.object(hello), Self.authOK)
        try c.reply(try await c.read(), #""ok":true,"doc":null"#)
        try await got.wait(for: 1)

        let missing = Hearth(port: server.port, settings: Self.settings(.tokenFile("/nonexistent/token")))
        defer { missing.terminate() }
        let failed = Recorder<DocumentSnapshot>()
        missing.document("a/b").getDocument(completion: failed.callback)
        let idle = try await server.accept()
        #expect(try await failed.waitForError() as? HearthError == HearthError(.invalidArgument, "cannot read /nonexistent/token"))
        idle.close()
    }
}

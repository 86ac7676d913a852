import Foundation

/// `hearth rules test CASES`: runs allow/deny expectations against a running daemon, as the Firestore
/// emulator's rules unit tests do. CASES is a JSON file:
///
///     {"setup": [<requests run as the admin>],
///      "cases": [{"name": "...", "as": {"uid": "alice", "token": {claims}} | null,
///                 "request": {<any request>}, "expect": "allow" | "deny"}]}
///
/// Each case runs on the admin's connection after `{"op":"hello","adminKey":...,"as":...}`, so the rules
/// judge it as that user (or as nobody for `null`). "deny" means the answer was PERMISSION_DENIED; "allow"
/// means any other answer (the rules let it through; it may still fail for another reason, such as
/// NOT_FOUND, which is printed). Cases that write really write: run against a daemon on test data.
enum RulesTest {
    struct Case {
        let name: String
        let actAs: Any           // NSNull or a dictionary
        let request: [String: Any]
        let expectAllow: Bool
    }

    struct Plan {
        let setup: [[String: Any]]
        let cases: [Case]
    }

    /// Reads and checks the file; every mistake names the case and the field.
    static func parse(_ data: Data, file: String) throws(UsageError) -> Plan {
        let root: Any
        do { root = try JSONSerialization.jsonObject(with: data) } catch {
            throw UsageError("\(file): not JSON: \((error as NSError).userInfo[NSDebugDescriptionErrorKey] ?? error)")
        }
        guard let top = root as? [String: Any] else { throw UsageError("\(file): the top level must be an object with \"cases\"") }
        for key in top.keys where key != "setup" && key != "cases" {
            throw UsageError("\(file): unknown field \"\(key)\" (allowed: setup, cases)")
        }
        guard let setup = (top["setup"] ?? [Any]()) as? [[String: Any]] else {
            throw UsageError("\(file): \"setup\" must be an array of request objects")
        }
        guard let list = top["cases"] as? [Any], !list.isEmpty else {
            throw UsageError("\(file): \"cases\" must be a non-empty array")
        }
        var cases: [Case] = []
        for (i, item) in list.enumerated() {
            guard let c = item as? [String: Any] else { throw UsageError("\(file): cases[\(i)] must be an object") }
            let name = c["name"] as? String ?? "cases[\(i)]"
            for key in c.keys where !["name", "as", "request", "expect"].contains(key) {
                throw UsageError("\(file): \(name): unknown field \"\(key)\" (allowed: name, as, request, expect)")
            }
            guard c.keys.contains("as") else {
                throw UsageError("\(file): \(name): \"as\" is required ({\"uid\":\"...\"} or null for a request without a token)")
            }
            let actAs = c["as"]!
            guard actAs is NSNull || actAs is [String: Any] else {
                throw UsageError("\(file): \(name): \"as\" must be {\"uid\":\"...\",\"token\":{claims}} or null")
            }
            guard let request = c["request"] as? [String: Any], request["op"] is String else {
                throw UsageError("\(file): \(name): \"request\" must be a request object with an \"op\"")
            }
            guard let expect = c["expect"] as? String, expect == "allow" || expect == "deny" else {
                throw UsageError("\(file): \(name): \"expect\" must be \"allow\" or \"deny\"")
            }
            cases.append(Case(name: name, actAs: actAs, request: request, expectAllow: expect == "allow"))
        }
        return Plan(setup: setup, cases: cases)
    }

    static func line(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
    }

    /// Runs the plan; returns the exit code (0 when every case met its expectation, 1 otherwise).
    static func run(_ plan: Plan, connection: ConnectionOptions) throws -> Int32 {
        guard case .adminKey(let key) = connection.credentials.kind else {
            throw UsageError("rules test speaks as each case's user through the admin: give --admin-key-file or HEARTH_ADMIN_KEY")
        }
        let client = try connection.connect()
        func call(_ object: [String: Any]) throws -> ServerResponse {
            try client.send(line: try line(object))
            while true {
                let r = ServerResponse(line: try client.readLine(timeout: connection.timeout))
                if !r.isPush { return r }
            }
        }
        for (i, request) in plan.setup.enumerated() {
            let r = try call(request)
            guard r.ok else {
                Console.error("setup[\(i)] failed: \(r.errorCode): \(r.errorMessage)")
                return ExitCode.serverError
            }
        }
        var failed = 0
        for c in plan.cases {
            let hello = try call(["op": "hello", "adminKey": key, "as": c.actAs])
            guard hello.ok else {
                Console.line("FAIL \(c.name): hello as the case's user refused: \(hello.errorCode): \(hello.errorMessage)")
                failed += 1
                continue
            }
            let r = try call(c.request)
            if r.ok, let sub = r.root?["sub"]?.string { _ = try call(["op": "unlisten", "sub": sub]) }
            let denied = !r.ok && r.errorCode == "PERMISSION_DENIED"
            let outcome = r.ok ? "allowed" : denied ? "denied: \(r.errorMessage)" : "allowed, then \(r.errorCode): \(r.errorMessage)"
            if denied != c.expectAllow {
                Console.line("ok   \(c.name) (\(outcome))")
            } else {
                Console.line("FAIL \(c.name): expected \(c.expectAllow ? "allow" : "deny"), \(outcome)")
                failed += 1
            }
        }
        _ = try? call(["op": "hello", "adminKey": key])
        Console.line("\(plan.cases.count - failed) of \(plan.cases.count) case\(plan.cases.count == 1 ? "" : "s") passed")
        return failed == 0 ? ExitCode.ok : ExitCode.serverError
    }
}

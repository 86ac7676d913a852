@testable import HearthServer
import Testing

/// The pure parts of access control: the hello throttle, protected mode, peer addresses.
@Suite struct HelloThrottleTests {
    @Test func refusesAfterTheLimitUntilTheOldestFailureAgesOut() {
        var t = HelloThrottle(limit: 3, windowMs: 60_000)
        #expect(t.refusal("10.0.0.1", now: 0) == nil)
        t.failed("10.0.0.1", now: 1_000)
        t.failed("10.0.0.1", now: 2_000)
        #expect(t.refusal("10.0.0.1", now: 2_000) == nil)     // two failures: still allowed
        t.failed("10.0.0.1", now: 3_000)
        #expect(t.refusal("10.0.0.1", now: 3_000) == 58_000)  // the first failure leaves the window at 61 s
        #expect(t.refusal("10.0.0.2", now: 3_000) == nil)     // other addresses are not affected
        #expect(t.refusal("10.0.0.1", now: 60_999) == 1)
        #expect(t.refusal("10.0.0.1", now: 61_000) == nil)    // two failures left in the window
        t.failed("10.0.0.1", now: 61_000)
        #expect(t.refusal("10.0.0.1", now: 61_000) == 1_000)  // refused again until 62 s
    }

    @Test func forgetsAddressesWhoseFailuresAged() {
        var t = HelloThrottle(limit: 2, windowMs: 1_000)
        for i in 0..<100 { t.failed("10.0.0.\(i)", now: 0) }
        #expect(t.trackedAddresses == 100)
        t.failed("10.1.0.1", now: 5_000)                        // a later failure prunes the stale ones
        #expect(t.trackedAddresses == 1)
    }

    @Test func zeroMeansNoLimit() {
        var t = HelloThrottle(limit: 0)
        for i in 0..<1000 { t.failed("10.0.0.1", now: UInt64(i)) }
        #expect(t.refusal("10.0.0.1", now: 1000) == nil)
    }

    @Test func peerAddressesDropThePort() {
        #expect(peerAddress("10.0.0.7:51234") == "10.0.0.7")
        #expect(peerAddress("[::1]:5") == "::1")
        #expect(peerAddress("[fe80::1%eth0]:7411") == "fe80::1%eth0")
        #expect(peerAddress("?") == "?")
    }
}

@Suite struct ProtectedModeTests {
    @Test(arguments: [
        ("127.0.0.1", false, false, false), ("127.1.2.3", false, false, false), ("localhost", false, false, false),
        ("::1", false, false, false),
        ("0.0.0.0", false, false, true), ("10.0.0.5", false, false, true), ("::", false, false, true),
        ("0.0.0.0", true, false, false),    // with rules
        ("0.0.0.0", false, true, false),    // --insecure-open
        ("127.0.0.1.example.com", false, false, true),
    ])
    func nonLoopbackNeedsRulesOrInsecureOpen(host: String, rules: Bool, insecureOpen: Bool, refused: Bool) {
        var s = SecuritySettings()
        s.rulesFile = rules ? "firestore.rules" : nil
        s.insecureOpen = insecureOpen
        let problem = s.protectionProblem(host: host)
        #expect((problem != nil) == refused, "\(host)")
        if let problem {
            #expect(problem.contains("--rules") && problem.contains("--insecure-open") && problem.contains(host))
        }
    }
}

import Foundation
import HearthTesting
import Testing

/// Every suite of several real nodes, run one test at a time: each holds one of the test runner's few
/// threads for seconds (blocking reads on its daemons), and two at once could starve the runner's async
/// tests of threads for a minute.
@Suite(.serialized) enum ClusterSuites {}

/// A listener's snapshots as a client keeps them: the result after each snapshot, and each snapshot's seq
/// and changes as the daemon sent them (canonical JSON, to compare across nodes).
struct ListenedQuery {
    /// Documents in result order: path and canonical JSON of the whole document.
    var rows: [(path: String, json: String)] = []
    var events: [(seq: Int, changes: String)] = []
    var states: [(seq: Int, rows: [String])] = []
    var firstSeq = 0

    /// Applies one snapshot line (`type` snapshot); throws when an index is out of range.
    mutating func apply(_ event: [String: Any]) throws {
        let seq = event["seq"] as? Int ?? -1
        let changes = event["changes"] as? [[String: Any]] ?? []
        if event["initial"] as? Bool == true { firstSeq = seq; rows = [] }
        if event["reset"] as? Bool == true { rows = [] }   // the whole result follows, as additions
        for change in changes {
            let doc = change["doc"] as? [String: Any] ?? [:]
            let path = doc["path"] as? String ?? ""
            let json = canonical(doc)
            let old = change["oldIndex"] as? Int ?? -1, new = change["newIndex"] as? Int ?? -1
            switch change["type"] as? String {
            case "added":
                guard new >= 0, new <= rows.count else { throw TestFailure("added at \(new) of \(rows.count) at seq \(seq)") }
                rows.insert((path, json), at: new)
            case "removed":
                guard old >= 0, old < rows.count, rows[old].path == path else { throw TestFailure("removed \(path) at \(old) at seq \(seq): \(rows.map(\.path))") }
                rows.remove(at: old)
            default:
                guard old >= 0, old < rows.count, rows[old].path == path, new >= 0, new < rows.count + 1 else {
                    throw TestFailure("modified \(path) from \(old) to \(new) at seq \(seq): \(rows.map(\.path))")
                }
                rows.remove(at: old)
                rows.insert((path, json), at: new)
            }
        }
        events.append((seq, canonical(changes)))
        states.append((seq, rows.map(\.json)))
    }
}

/// JSON with sorted keys: equal values, equal text.
func canonical(_ value: Any) -> String {
    guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]) else { return "\(value)" }
    return String(decoding: data, as: UTF8.self)
}

/// Writers under load: each writes its own document (`load/wN`, `{"v":i}` with i going up) through a random
/// node of those allowed, again and again, and remembers the last value acknowledged. A failed write (the
/// node is down, the committer changes) is not acknowledged, and the writer goes on with the next value.
final class ClusterLoad: @unchecked Sendable {
    let acked = Locked<[Int: Int]>([:])
    let acknowledged = Locked(0)
    let failed = Locked(0)
    let allowed: Locked<Set<Int>>
    private let stopped = Locked(false)
    private let group = DispatchGroup()
    /// Signalled after every write's outcome, for `waitForProgress` and `waitForFailures`.
    private let outcome = NSCondition()

    init(_ c: ClusterNodes, writers: Int = 4) {
        allowed = Locked(Set(c.nodes.indices))
        for w in 0..<writers {
            group.enter()
            Thread.detachNewThread { [self] in
                defer { group.leave() }
                var conns: [Int: WireClient] = [:]
                var i = 0
                while !stopped.value {
                    i += 1
                    // A client's backoff, not a wait for an event: no node to write to, or a write failed.
                    guard let node = allowed.value.randomElement() else { usleep(10_000); continue }
                    do {
                        let conn = try conns[node] ?? c[node].connect()
                        conns[node] = conn
                        let r = try conn.request(#"{"op":"set","path":"load/w\#(w)","data":{"v":\#(i)}}"#, timeout: 10)
                        if r.isOK {
                            note { acked.update { $0[w] = i }; acknowledged.update { $0 += 1 } }
                        } else {
                            note { failed.update { $0 += 1 } }
                            usleep(20_000)
                        }
                    } catch {
                        conns[node] = nil
                        note { failed.update { $0 += 1 } }
                        usleep(20_000)
                    }
                }
            }
        }
    }

    private func note(_ body: () -> Void) {
        outcome.lock()
        body()
        outcome.broadcast()
        outcome.unlock()
    }

    /// Waits, woken by each write's outcome, until `done` holds; throws naming `what` after `timeout` s.
    private func wait(_ what: String, timeout: Double, until done: () -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        outcome.lock()
        defer { outcome.unlock() }
        while !done() {
            guard outcome.wait(until: deadline) || done() else {
                throw TestFailure("\(what): \(acknowledged.value) acknowledged, \(failed.value) failed")
            }
        }
    }

    /// Waits until `n` more writes are acknowledged than when called (a barrier on progress).
    func waitForProgress(_ n: Int, timeout: Double = 60) throws {
        let target = acknowledged.value + n
        try wait("writes stalled short of \(target)", timeout: timeout) { acknowledged.value >= target }
    }

    /// Waits until `n` more writes have failed than when called.
    func waitForFailures(_ n: Int, timeout: Double = 60) throws {
        let target = failed.value + n
        try wait("fewer than \(target) writes failed", timeout: timeout) { failed.value >= target }
    }

    func stop() {
        stopped.update { $0 = true }
        group.wait()
    }
}

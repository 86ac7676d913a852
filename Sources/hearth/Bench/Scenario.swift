/// What one connection's request stream needs: its index, its own random generator and how many
/// requests it has sent.
struct RequestState {
    let connection: Int
    var random: FastRandom
    var sent: UInt64 = 0
}

/// A bench workload. One instance per worker thread (loop thread only), shared by that worker's
/// connections. A scenario writes request lines; the driver owns timing, pipelining and counting.
protocol BenchScenario: AnyObject {
    /// The longest line (with its newline) `writeRequest` can write.
    var maxRequestBytes: Int { get }

    /// Writes the next request line of a connection into `buffer` (at least `maxRequestBytes` long) and
    /// returns its length. Called once per request on the hot path: no allocation, no Foundation.
    func writeRequest(into buffer: UnsafeMutableRawPointer, state: inout RequestState) -> Int

    /// A pushed line (with `type`) arrived at `now` (monotonic ns). A listen scenario returns the
    /// commit-to-receipt latency in ns to record in the delivery histogram; the default ignores pushes.
    func pushed(_ line: UnsafeRawBufferPointer, now: UInt64) -> UInt64?
}

extension BenchScenario {
    func pushed(_ line: UnsafeRawBufferPointer, now: UInt64) -> UInt64? { nil }
}

/// A named scenario in `ScenarioTable`. `make` runs once per worker thread.
struct ScenarioSpec: Sendable {
    let name: String
    let summary: String
    /// Load the key space (pipelined sets of every key) before measuring.
    let loadsKeys: Bool
    let make: @Sendable (BenchOptions) -> any BenchScenario
}

/// Every scenario `hearth bench` knows. New workloads (query by customer, listen fan-out with delivery
/// latency) are new entries: a `BenchScenario` that writes their requests and, for listen, reads pushes.
enum ScenarioTable {
    static let all: [ScenarioSpec] = [
        ScenarioSpec(name: "ping", summary: "ping ops: the protocol floor (framing, dispatch, one small response)",
                     loadsKeys: false) { _ in PingScenario() },
        ScenarioSpec(name: "get", summary: "point gets of pre-loaded documents, uniform random keys over --keys",
                     loadsKeys: true) { o in GetScenario(o.documents) },
        ScenarioSpec(name: "set", summary: "durable sets of --doc-size documents, uniform random keys over --keys",
                     loadsKeys: false) { o in SetScenario(o.documents) },
        ScenarioSpec(name: "mixed", summary: "--read-percent gets (default 80), the rest sets, over pre-loaded keys",
                     loadsKeys: true) { o in MixedScenario(o.documents, readPercent: o.readPercent) },
        ScenarioSpec(name: "listen", summary: "fan-out: --listeners subscribers, --connections writers x --pipeline; deliveries/s and commit-to-delivery latency (--redis-port for Redis pub/sub, --idle for memory per listener)",
                     loadsKeys: false) { _ in PingScenario() },
        ScenarioSpec(name: "query", summary: "call records of a random customer (--keys customers) newest first, limit 20; load with clients/python/bench/call_records.py",
                     loadsKeys: false) { o in QueryScenario(customers: o.keys) },
        ScenarioSpec(name: "timeline", summary: "follower fan-out: --followers feed listeners (limit 20) over --listeners connections; one author posts (one commit of F+3 writes); posts/s and commit-to-last-follower latency",
                     loadsKeys: false) { _ in PingScenario() },
        ScenarioSpec(name: "departments", summary: "joins: commit create department_memberships/u<k>_d<d> + increment departments/d<d>.memberCount over --keys users x --departments; ALREADY_EXISTS counted apart",
                     loadsKeys: false) { _ in PingScenario() },
        ScenarioSpec(name: "callrecords", summary: "customer screen: --read-percent customer queries (customerId ==, callDate desc, limit 20; index made in setup), the rest call record appends; --preload records first",
                     loadsKeys: false) { _ in PingScenario() },
    ]

    static func find(_ name: String) -> ScenarioSpec? { all.first { $0.name == name } }
}

/// A fast, non-cryptographic generator (xorshift64*), one per connection.
struct FastRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }

    @inline(__always)
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }

    /// Uniform in 0..<bound (bound > 0), by multiply-high.
    @inline(__always)
    mutating func below(_ bound: UInt64) -> UInt64 { next().multipliedFullWidth(by: bound).high }
}

final class PingScenario: BenchScenario {
    private let template = RequestTemplate([.text(#"{"op":"ping"}"#)])
    var maxRequestBytes: Int { template.count }

    func writeRequest(into buffer: UnsafeMutableRawPointer, state: inout RequestState) -> Int {
        template.write(into: buffer)
    }
}

final class GetScenario: BenchScenario {
    private let template: RequestTemplate
    private let keys: UInt64
    var maxRequestBytes: Int { template.count }

    init(_ docs: BenchDocuments) {
        template = docs.getTemplate()
        keys = UInt64(docs.keys)
    }

    func writeRequest(into buffer: UnsafeMutableRawPointer, state: inout RequestState) -> Int {
        template.write(into: buffer, key: state.random.below(keys))
    }
}

final class SetScenario: BenchScenario {
    private let template: RequestTemplate
    private let keys: UInt64
    var maxRequestBytes: Int { template.count }

    init(_ docs: BenchDocuments) {
        template = docs.setTemplate()
        keys = UInt64(docs.keys)
    }

    func writeRequest(into buffer: UnsafeMutableRawPointer, state: inout RequestState) -> Int {
        template.write(into: buffer, key: state.random.below(keys), seq: state.sent)
    }
}

final class MixedScenario: BenchScenario {
    private let get: RequestTemplate
    private let set: RequestTemplate
    private let keys: UInt64
    private let readPercent: UInt64
    var maxRequestBytes: Int { max(get.count, set.count) }

    init(_ docs: BenchDocuments, readPercent: Int) {
        get = docs.getTemplate()
        set = docs.setTemplate()
        keys = UInt64(docs.keys)
        self.readPercent = UInt64(readPercent)
    }

    func writeRequest(into buffer: UnsafeMutableRawPointer, state: inout RequestState) -> Int {
        let key = state.random.below(keys)
        if state.random.below(100) < readPercent { return get.write(into: buffer, key: key) }
        return set.write(into: buffer, key: key, seq: state.sent)
    }
}

/// The setup step: sets every key of the key space exactly once, in order, across all connections of
/// one worker (the key counter is shared; one worker thread runs it).
final class LoadScenario: BenchScenario {
    private let template: RequestTemplate
    private var nextKey: UInt64 = 0
    var maxRequestBytes: Int { template.count }

    init(_ docs: BenchDocuments) { template = docs.setTemplate() }

    func writeRequest(into buffer: UnsafeMutableRawPointer, state: inout RequestState) -> Int {
        defer { nextKey += 1 }
        return template.write(into: buffer, key: nextKey, seq: nextKey)
    }
}

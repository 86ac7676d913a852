import HearthEngine
import HearthLoop
import HearthModel
import HearthProtocol
import HearthServer
import HearthStorage

/// A connection without a socket for the request fuzzer: collects what the session sends.
final class FuzzConnection: ClientConnection {
    let peer = "fuzz"
    var onRead: ((UnsafeRawBufferPointer) -> Void)?
    var onDrain: (() -> Void)?
    var onEndOfInput: (() -> Void)?
    var onClose: ((LoopError?) -> Void)?
    var pendingOutputBytes: Int { 0 }
    var outputNotTaken: Int { 0 }
    var output: [UInt8] = []
    private(set) var closed = false
    func startReading() {}
    func pauseReading() {}
    func resumeReading() {}
    func send(_ bytes: UnsafeRawBufferPointer) { if !closed { output.append(contentsOf: bytes) } }
    func send(_ bytes: [UInt8]) { if !closed { output.append(contentsOf: bytes) } }
    func expedite() {}
    func close() { guard !closed else { return }; closed = true; onClose?(nil) }
    func close(deadlineMs: UInt64?) { close() }
    func dropUnsentOutput() -> Int { 0 }
    func abort() { close() }
}

/// The request fuzzer: real sessions and dispatcher over a MemoryStore, the group commit stepped in process.
final class RequestFuzz {
    nonisolated(unsafe) static let shared = RequestFuzz()
    private var server: Server!
    private var store: MemoryStore!
    private var runs = 0
    private let checker = JSONParser()

    private func fresh() {
        server?.closeReaders()
        store = MemoryStore()
        var config = ServerConfig()
        config.dataDir = "/tmp/hearth-fuzz-request"
        config.readers = 1
        config.maxLineBytes = 1 << 16
        server = try! Server(config: config, store: store, logger: Logger(enabled: false))
    }

    func run(_ data: UnsafeRawBufferPointer) {
        if server == nil || runs % 2000 == 0 { fresh() }
        runs += 1
        let conn = FuzzConnection()
        server.accept(conn)
        let input = Array(data)
        // Two reads, split where the first byte says: pipelining across reads.
        let cut = input.isEmpty ? 0 : Int(input[0]) % (input.count + 1)
        input[..<cut].withUnsafeBytes { conn.onRead?($0) }
        input[cut...].withUnsafeBytes { conn.onRead?($0) }
        // Let every write become durable and every read come back, as the loop would.
        for _ in 0..<64 {
            var progressed = false
            while server.readsInFlight > 0 { server.loop.runOnce(); progressed = true }
            if let batch = server.engine.takeBatch() {
                server.batchLanded(batch, error: Engine.makeDurable(batch, in: store))
                progressed = true
            }
            if !progressed { break }
        }
        check(conn.output, input: input)
        conn.close()
    }

    /// Every line sent is valid UTF-8 and valid JSON; there is one response per request line.
    private func check(_ output: [UInt8], input: [UInt8]) {
        precondition(String(validating: output, as: UTF8.self) != nil, "request: output is not valid UTF-8")
        var responses = 0
        var start = 0
        for (i, b) in output.enumerated() where b == 10 {
            let line = output[start..<i]
            start = i + 1
            guard let ref = try? line.withUnsafeBytes({ try checker.parse($0) }) else {
                preconditionFailure("request: an output line is not JSON: \(String(decoding: line, as: UTF8.self))")
            }
            if ref["ok"] != nil { responses += 1 }
        }
        precondition(start == output.count, "request: output ends inside a line")
        var framer = LineFramer(maxLineBytes: 1 << 16)
        var requests = 0
        input.withUnsafeBytes { framer.feed($0) { _ in requests += 1 } }
        // An unfinished last line is not a request yet.
        precondition(responses == requests, "request: \(requests) request lines, \(responses) responses")
    }
}

/// The query fuzzer: the decoder, then the planner and executor on what it accepts.
final class QueryFuzz {
    nonisolated(unsafe) static let shared = QueryFuzz()
    private let parser = JSONParser()
    private lazy var engine: Engine = {
        let store = MemoryStore()
        let e = try! Engine(store: store, codec: JSONDocumentCodec())
        let values: [Value] = [.null, .bool(true), .int(1), .double(2.5), .string("a"), .string("b"), .array([.int(1), .string("a")]),
                               .map(MapValue([MapValue.Field(key: "x", value: .int(1))]))]
        for (i, v) in values.enumerated() {
            let path = try! DocumentPath(parsing: "c/d\(i)")
            let fields = MapValue([MapValue.Field(key: "a", value: v), MapValue.Field(key: "n", value: .int(Int64(i)))])
            _ = try? e.commit([Write(kind: .set, path: path, operation: .update(fields: fields, mask: nil))]) { _ in }
        }
        while let b = e.takeBatch() { e.finish(b, error: Engine.makeDurable(b, in: store)) }
        return e
    }()

    func run(_ data: UnsafeRawBufferPointer) {
        guard let ref = try? parser.parse(data), ref.kind == .object else { return }
        guard let q = try? QueryDecoding.decode(ref, context: "query") else { return }
        if let r = try? engine.runQuery(q) {
            if let limit = q.limit { precondition(r.documents.count <= limit, "query: more results than the limit") }
        }
        _ = try? engine.runAggregate(q, [.count, .sum(try! FieldPath.parse("n"))])
    }
}

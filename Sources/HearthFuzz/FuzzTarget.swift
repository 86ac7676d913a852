import HearthEngine
import HearthModel
import HearthProtocol
import HearthServer
import HearthStorage

/// The fuzz targets. Each takes arbitrary bytes and traps (`precondition`) when an invariant breaks; any
/// error the code under test reports cleanly is fine.
enum FuzzTarget: String, CaseIterable {
    /// `LineFramer`: the same events however the input is split; lines within the limit, without newlines,
    /// never blank.
    case framer
    /// Whole request lines through real sessions, the dispatcher, every decoder and handler, the engine and
    /// the group commit (in memory): one response per line, every output line valid JSON in valid UTF-8.
    case request
    /// The value codec: a decoded value re-encodes to the same bytes after a round trip.
    case value
    /// The query decoder, then planning and running what it accepts against a small collection.
    case query
    /// Opening a SQLite store whose file has bytes flipped and whose WAL is torn: errors, never a crash;
    /// whatever opens can be read through.
    case recovery

    nonisolated(unsafe) static var current: FuzzTarget = .framer

    func run(_ data: UnsafeRawBufferPointer) {
        switch self {
        case .framer: FramerFuzz.run(data)
        case .request: RequestFuzz.shared.run(data)
        case .value: ValueFuzz.run(data)
        case .query: QueryFuzz.shared.run(data)
        case .recovery: RecoveryFuzz.shared.run(data)
        }
    }
}

enum FramerFuzz {
    enum Event: Equatable { case line([UInt8]), tooLong(Int) }

    static func events(_ input: [UInt8], max: Int, cuts: [Int]) -> [Event] {
        var framer = LineFramer(maxLineBytes: max)
        var out: [Event] = []
        func take(_ e: LineFramer.Event) {
            switch e {
            case .line(let b): out.append(.line(Array(b)))
            case .tooLong(let n): out.append(.tooLong(n))
            }
        }
        var start = 0
        for cut in cuts + [input.count] where cut >= start {
            input[start..<cut].withUnsafeBytes { framer.feed($0, take) }
            start = cut
        }
        framer.finish(take)
        return out
    }

    static func run(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first else { return }
        let max = Int(first % 64) + 1
        let input = Array(data.dropFirst())
        let whole = events(input, max: max, cuts: [])
        // Cut wherever the input holds a byte divisible by 7, and at every byte.
        let some = input.indices.filter { input[$0] % 7 == 0 }
        let split = events(input, max: max, cuts: some)
        precondition(whole == split, "framer: events differ when the input is split")
        if input.count <= 256 { precondition(events(input, max: max, cuts: Array(input.indices)) == whole, "framer: byte-by-byte differs") }
        for e in whole {
            if case .line(let l) = e {
                precondition(l.count <= max, "framer: a line over the limit")
                precondition(!l.contains(10), "framer: a newline inside a line")
                precondition(!l.allSatisfy { $0 == 32 || $0 == 9 || $0 == 13 }, "framer: a blank line delivered")
            }
        }
    }
}

enum ValueFuzz {
    nonisolated(unsafe) static let parser = JSONParser()

    static func encode(_ v: Value) -> [UInt8] {
        var w = JSONWriter()
        ValueCodec.encode(v, into: &w)
        return w.bytes
    }

    static func run(_ data: UnsafeRawBufferPointer) {
        guard let ref = try? parser.parse(data) else { return }
        for nested in [false, true] {
            guard let v = try? ValueCodec.decodeValue(ref, options: .init(allowNestedArrays: nested)) else { continue }
            let once = encode(v)
            precondition(String(validating: once, as: UTF8.self) != nil, "value: encoding is not UTF-8")
            let again = try? ValueCodec.decodeValue(try parser.parse(once), options: .init(allowNestedArrays: true))
            precondition(again != nil, "value: its own encoding does not decode: \(String(decoding: once, as: UTF8.self))")
            precondition(encode(again!) == once, "value: the round trip changed the encoding")
            // Value order is total: a value equals itself.
            precondition(ValueOrder.compare(v, v) == 0, "value: not equal to itself")
            return
        }
    }
}

import HearthProtocol
import Testing

enum FrameEvent: Equatable, CustomStringConvertible {
    case line(String)
    case tooLong(Int)

    var description: String {
        switch self {
        case .line(let s): return "line(\(s.debugDescription))"
        case .tooLong(let n): return "tooLong(\(n))"
        }
    }
}

/// Frames `chunks` (then finishes) and returns the events.
func frame(_ chunks: [ArraySlice<UInt8>], max: Int, finish: Bool = true) -> [FrameEvent] {
    var framer = LineFramer(maxLineBytes: max)
    var out: [FrameEvent] = []
    let record = { (e: LineFramer.Event) in
        switch e {
        case .line(let b): out.append(.line(String(decoding: b, as: UTF8.self)))
        case .tooLong(let n): out.append(.tooLong(n))
        }
    }
    for c in chunks { Array(c).withUnsafeBytes { framer.feed($0, record) } }
    if finish { framer.finish(record) }
    return out
}

/// A small deterministic generator for random cuts.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct LineFramerTests {
    static let sample = Array(("{\"a\":1}\r\n\n   \t\r\n\r\nhello world\n0123456789ABCDEF\nok\r\n0123456789\r\n"
        + "  \t  \n\r\r\nxy\r\n" + String(repeating: "z", count: 40) + "\r\nafter\nlast").utf8)
    static let max = 10
    static let expected: [FrameEvent] = [
        .line("{\"a\":1}"), .tooLong(11), .tooLong(16), .line("ok"), .line("0123456789"), .line("xy"),
        .tooLong(40), .line("after"), .line("last"),
    ]

    @Test func wholeInput() {
        #expect(frame([Self.sample[...]], max: Self.max) == Self.expected)
    }

    @Test func everySingleCut() {
        let s = Self.sample
        for i in 0...s.count {
            #expect(frame([s[0..<i], s[i...]], max: Self.max) == Self.expected, "cut at \(i)")
        }
    }

    @Test func everyPairOfCuts() {
        let s = Self.sample
        for i in 0...s.count {
            for j in i...s.count {
                let got = frame([s[0..<i], s[i..<j], s[j...]], max: Self.max)
                if got != Self.expected { Issue.record("cuts at \(i), \(j): \(got)"); return }
            }
        }
    }

    @Test func byteAtATime() {
        #expect(frame(Self.sample.indices.map { Self.sample[$0...$0] }, max: Self.max) == Self.expected)
    }

    @Test func randomMultiCuts() {
        var rng = SplitMix(state: 42)
        let s = Self.sample
        for _ in 0..<2000 {
            var cuts = (0..<Int.random(in: 1...12, using: &rng)).map { _ in Int.random(in: 0...s.count, using: &rng) }
            cuts.sort()
            var chunks: [ArraySlice<UInt8>] = []
            var from = 0
            for c in cuts {
                chunks.append(s[from..<c])
                from = c
            }
            chunks.append(s[from...])
            let got = frame(chunks, max: Self.max)
            if got != Self.expected { Issue.record("cuts \(cuts): \(got)"); return }
        }
    }

    @Test func limitBoundaries() {
        let line10 = String(repeating: "a", count: 10)
        #expect(frame([Array((line10 + "\n").utf8)[...]], max: 10) == [.line(line10)])
        #expect(frame([Array((line10 + "\r\n").utf8)[...]], max: 10) == [.line(line10)])
        #expect(frame([Array((line10 + "b\n").utf8)[...]], max: 10) == [.tooLong(11)])
        #expect(frame([Array((line10 + "b\r\n").utf8)[...]], max: 10) == [.tooLong(11)])
        // Overlong whitespace is reported: the size check comes before the blank check.
        #expect(frame([Array((String(repeating: " ", count: 11) + "\n").utf8)[...]], max: 10) == [.tooLong(11)])
    }

    @Test func unfinishedLineWaitsForNewlineOrFinish() {
        #expect(frame([Array("abc".utf8)[...]], max: 10, finish: false) == [])
        #expect(frame([Array("abc".utf8)[...]], max: 10) == [.line("abc")])
        #expect(frame([Array("abcdefghijklmnop".utf8)[...]], max: 10) == [.tooLong(16)])
        #expect(frame([Array("   ".utf8)[...]], max: 10) == [])
    }

    @Test func stateAccessors() {
        var f = LineFramer(maxLineBytes: 4)
        Array("ab".utf8).withUnsafeBytes { f.feed($0) { _ in } }
        #expect(f.unfinishedLineBytes == 2)
        #expect(!f.isDiscardingLine)
        Array("cdefg".utf8).withUnsafeBytes { f.feed($0) { _ in } }
        #expect(f.isDiscardingLine)
        #expect(f.unfinishedLineBytes == 7)
        var events: [FrameEvent] = []
        Array("\nok\n".utf8).withUnsafeBytes {
            f.feed($0) { e in
                if case .tooLong(let n) = e { events.append(.tooLong(n)) }
                if case .line(let b) = e { events.append(.line(String(decoding: b, as: UTF8.self))) }
            }
        }
        #expect(events == [.tooLong(7), .line("ok")])
        #expect(f.unfinishedLineBytes == 0)
    }

    @Test func wholeLineInsideChunkIsNotCopied() {
        var f = LineFramer()
        let chunk = Array("{\"op\":1}\n{\"op\":2}\n".utf8)
        chunk.withUnsafeBytes { c in
            let range = UInt(bitPattern: c.baseAddress!)..<UInt(bitPattern: c.baseAddress! + c.count)
            var n = 0
            f.feed(c) { e in
                guard case .line(let b) = e else { Issue.record("unexpected \(e)"); return }
                #expect(range.contains(UInt(bitPattern: b.baseAddress!)))
                n += 1
            }
            #expect(n == 2)
        }
    }

    @Test func errorsFromTheCallbackPropagate() {
        struct Stop: Error {}
        var f = LineFramer()
        var seen = 0
        #expect(throws: Stop.self) {
            try f.feed(Array("a\nb\n".utf8)) { (_: LineFramer.Event) throws(Stop) in
                seen += 1
                throw Stop()
            }
        }
        #expect(seen == 1)
    }

    @Test func longLineInSmallChunksIsLinear() {
        // 4 MiB fed 64 bytes at a time: each byte is scanned once, so this stays fast even in debug builds.
        let total = 4 << 20
        var f = LineFramer(maxLineBytes: 8 << 20)
        let chunk = [UInt8](repeating: 120, count: 64)
        var got = 0
        chunk.withUnsafeBytes { c in
            for _ in 0..<(total / 64) { f.feed(c) { _ in got += 1 } }
        }
        #expect(f.unfinishedLineBytes == total)
        Array("\n".utf8).withUnsafeBytes { f.feed($0) { e in if case .line(let b) = e { got = b.count } } }
        #expect(got == total)
    }
}

#if canImport(Glibc)
import Glibc
#endif
@testable import HearthProtocol
import HearthModel
import Testing

/// `FieldsJSON.encodeFields` encodes in this thread's kept writer (`ThreadWriter`): the bytes are those of a
/// writer of its own, whatever the thread's writer held before, however large, and a use inside another gets
/// a writer of its own.
@Suite struct ThreadWriterTests {
    static func document(_ n: Int, pad: Int) -> MapValue {
        var m = MapValue()
        m["n"] = .int(Int64(n))
        m["pad"] = .string(String(repeating: "x", count: pad))
        m["quote"] = .string("a \"quoted\"\nline")
        m["list"] = .array([.double(2.5), .bool(true), .null, .map(MapValue([.init(key: "k", value: .int(1))]))])
        return m
    }

    static func fresh(_ m: MapValue) -> [UInt8] {
        var w = JSONWriter(capacity: 16)
        w.fields(m)
        return w.bytes
    }

    @Test func encodingsAreThoseOfAWriterOfTheirOwn() {
        let codec = FieldsJSON()
        // Small, then one larger than the kept capacity (its buffer is let go), then small again.
        for (i, pad) in [10, 300, 2 * JSONWriter.retainedCapacity, 5, 0, 70_000, 3, ThreadWriter.keptCapacity].enumerated() {
            let m = Self.document(i, pad: pad)
            #expect(codec.encodeFields(m) == Self.fresh(m), "document \(i), pad \(pad)")
        }
    }

    /// The point of the kept writer: it is the only reference to its buffer while it writes (or every append
    /// would copy it), its buffer is reused by the next encoding on the thread, and one grown past
    /// `keptCapacity` is not kept.
    @Test func theWriterIsUniqueWhileItWritesAndKeptOnlyWhileSmall() {
        let codec = FieldsJSON()
        _ = codec.encodeFields(Self.document(0, pad: 10))
        let kept = ThreadWriter.keptWriterCapacity
        #expect(kept != nil)
        ThreadWriter.withWriter { w in
            #expect(isKnownUniquelyReferenced(&w.storage))
            #expect(w.count == 0)
            #expect(ThreadWriter.keptWriterCapacity == nil, "moved out of its slot while in use")
        }
        #expect(ThreadWriter.keptWriterCapacity == kept, "the same buffer is kept")
        _ = codec.encodeFields(Self.document(1, pad: 2 * ThreadWriter.keptCapacity))
        #expect(ThreadWriter.keptWriterCapacity == nil, "a buffer past keptCapacity is let go")
        _ = codec.encodeFields(Self.document(2, pad: 10))
        #expect((ThreadWriter.keptWriterCapacity ?? .max) <= ThreadWriter.keptCapacity)
    }

    @Test func aNestedUseGetsAWriterOfItsOwn() {
        let outer = Self.document(1, pad: 40), inner = Self.document(2, pad: 20)
        let (o, i) = ThreadWriter.withWriter { w -> ([UInt8], [UInt8]) in
            w.fields(outer)
            let i = FieldsJSON().encodeFields(inner)
            return (w.bytes, i)
        }
        #expect(o == Self.fresh(outer))
        #expect(i == Self.fresh(inner))
        #expect(FieldsJSON().encodeFields(outer) == Self.fresh(outer))
    }

    /// `PerThread` (behind the kept writer and `ThreadParser`): one object per thread, the same on every call,
    /// another on another thread, released when that thread exits.
    @Test func perThreadObjectsAreOwnedByTheirThread() {
        final class Probe: @unchecked Sendable {}
        final class Seen: @unchecked Sendable {
            weak var object: Probe?
            var sameTwice = false
            var other: ObjectIdentifier?
        }
        let per = PerThread { Probe() }
        let mine = per.current
        #expect(per.current === mine)
        let seen = Seen()
        final class Body { let run: () -> Void; init(_ run: @escaping () -> Void) { self.run = run } }
        let body = Body {
            let theirs = per.current
            seen.sameTwice = per.current === theirs
            seen.other = ObjectIdentifier(theirs)
            seen.object = theirs
        }
        // A thread of its own, joined: `pthread_join` returns once it has exited and its keys' destructors ran.
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { arg in
            Unmanaged<Body>.fromOpaque(arg!).takeRetainedValue().run()
            return nil
        }, Unmanaged.passRetained(body).toOpaque())
        #expect(rc == 0)
        pthread_join(thread, nil)
        #expect(seen.sameTwice)
        #expect(seen.other != ObjectIdentifier(mine))
        #expect(seen.object == nil, "released with its thread")
    }
}

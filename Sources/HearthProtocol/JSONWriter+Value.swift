import HearthModel

extension JSONWriter {
    /// Writes the wire form of `v` (see `ValueCodec`).
    public mutating func value(_ v: Value) {
        switch v {
        case .null: null()
        case .bool(let b): bool(b)
        case .int(let i): int(i)
        case .double(let d): double(d)
        case .string(let s): string(s)
        case .timestamp(let t): timestamp(t)
        case .bytes(let b):
            let s = separated()
            s.append(#"{"$bytes":""#)
            Base64.encode(b, into: s)
            s.append(#""}"#)
            needsComma = true
        case .reference(let p):
            let s = separated()
            s.append(#"{"$ref":""#)
            var first = true
            for segment in p.path.segments {
                if !first { s.append(47) }
                first = false
                var segment = segment
                segment.withUTF8 { JSONWriter.appendEscaped(UnsafeRawBufferPointer($0), to: s) }
            }
            s.append(#""}"#)
            needsComma = true
        case .geoPoint(let g):
            separated().append(#"{"$geopoint":["#)
            needsComma = false
            double(g.latitude)
            double(g.longitude)
            unique().append("]}")
            needsComma = true
        case .array(let a):
            beginArray()
            for e in a { value(e) }
            endArray()
        case .map(let m):
            fields(m)
        }
    }

    /// Writes a map as one JSON object, keys in `MapValue` order.
    public mutating func fields(_ m: MapValue) {
        beginObject()
        for f in m {
            key(f.key)
            value(f.value)
        }
        endObject()
    }

    /// Writes `{"$timestamp":"YYYY-MM-DDTHH:MM:SS.ffffffZ"}`.
    public mutating func timestamp(_ t: Timestamp) {
        let s = separated()
        s.append(#"{"$timestamp":""#)
        s.reserve(29)
        t.writeRFC3339(into: s.base + s.count)
        s.count += 27
        s.appendReserved(34)
        s.appendReserved(125)
        needsComma = true
    }
}

import HearthModel

// Small helpers shared by the HearthModel test files.

/// A reference value to a document path that the test knows is valid.
func ref(_ path: String) -> Value {
    .reference(try! DocumentPath(parsing: path))
}

func geo(_ lat: Double, _ lng: Double) -> Value {
    .geoPoint(GeoPoint(latitude: lat, longitude: lng))
}

func ts(_ micros: Int64) -> Value {
    .timestamp(Timestamp(micros: micros))
}

func map(_ pairs: [(String, Value)]) -> Value {
    .map(MapValue(pairs.map { MapValue.Field(key: $0.0, value: $0.1) }))
}

/// Normalises a comparison result to -1, 0 or 1.
func sign(_ x: Int) -> Int { x < 0 ? -1 : (x > 0 ? 1 : 0) }

/// A readable rendering of a value for test names and failure messages (distinguishes int from double and
/// shows strings by their scalars so that precomposed and decomposed forms are told apart).
func show(_ v: Value) -> String {
    switch v {
    case .null: return "null"
    case .bool(let b): return "\(b)"
    case .int(let i): return "int(\(i))"
    case .double(let d):
        if d.isNaN { return "double(nan:0x\(String(d.bitPattern, radix: 16)))" }
        return "double(\(d))"
    case .timestamp(let t): return "ts(\(t.micros))"
    case .string(let s): return "string(\(showScalars(s)))"
    case .bytes(let b): return "bytes(\(b))"
    case .reference(let p): return "ref(\(p))"
    case .geoPoint(let g): return "geo(\(g.latitude),\(g.longitude))"
    case .array(let a): return "[" + a.map(show).joined(separator: ", ") + "]"
    case .map(let m): return "{" + m.map { "\(showScalars($0.key)): \(show($0.value))" }.joined(separator: ", ") + "}"
    }
}

func showScalars(_ s: String) -> String {
    "\"" + s.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F
        ? String($0) : "\\u{\(String($0.value, radix: 16, uppercase: true))}" }.joined() + "\""
}

/// Compares optional values exactly: `.none` (absent) is not `.some(.null)`. (Avoids `== nil`, where the
/// literal could be typed as `Value.null` because `Value` is `ExpressibleByNilLiteral`.)
func same(_ a: Value?, _ b: Value?) -> Bool {
    switch (a, b) {
    case (.none, .none): return true
    case (.some(let x), .some(let y)): return x == y
    default: return false
    }
}

func showOptional(_ v: Value?) -> String { v.map(show) ?? "absent" }

import HearthProtocol

extension JSONRef {
    /// Calls `body` with each member's key and value, in document order.
    func forEachMember(_ body: (String, JSONRef) -> Void) {
        for m in members { body(m.key, m.value) }
    }

    /// Calls `body` with each element, in order.
    func forEachElement(_ body: (JSONRef) -> Void) {
        for e in elements { body(e) }
    }

    /// A request id re-encoded as JSON to be echoed: the same string, the same integer (any that fits 64
    /// bits, signed or not), the same double (in its shortest form that reads back to it: `1.50` gives
    /// `1.5`), or null. Nil for the kinds an id may not be (booleans, arrays, objects).
    var idEcho: [UInt8]? {
        var w = JSONWriter(capacity: 32)
        switch kind {
        case .string: w.string(string!)
        case .int: w.int(int64!)
        case .double:
            if let u = unsignedInteger { w.uint(u) } else { w.double(double!) }
        case .null: w.null()
        case .bool, .array, .object: return nil
        }
        return w.bytes
    }
}

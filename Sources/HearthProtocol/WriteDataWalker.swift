import HearthModel

/// Walks a write's data maps, pulling out sentinels: transforms become `FieldTransform`s, `$delete`s are
/// recorded (or rejected), `$documentId` becomes the document's ID. Optionally records every leaf path (a
/// non-map value or an empty map) for `set` with merge. Values inside arrays go through `ValueDecoder`,
/// which rejects sentinels there.
struct WriteDataWalker {
    enum DeletePolicy {
        case allow
        case reject(String)
    }

    let values: ValueDecoder
    let deletePolicy: DeletePolicy
    let collectLeaves: Bool
    /// The path of the member being walked.
    var segments: [String] = []
    var transforms: [FieldTransform] = []
    var deletes: [FieldPath] = []
    var leaves: [FieldPath] = []

    init(values: ValueDecoder, deletePolicy: DeletePolicy, collectLeaves: Bool) {
        self.values = values
        self.deletePolicy = deletePolicy
        self.collectLeaves = collectLeaves
    }

    /// Walks an object's members (each at `memberDepth`, in key order); returns them with sentinels taken out.
    mutating func map(_ r: JSONRef, memberDepth: Int) throws(DecodeFailure) -> MapValue {
        if memberDepth > values.maxDepth && r.count > 0 { throw values.tooDeep() }
        return try MapKeys.withSortedMembers(r, maxKeyBytes: values.maxKeyBytes) { (members) throws(DecodeFailure) -> MapValue in
            var fields: [MapValue.Field] = []
            fields.reserveCapacity(members.count)
            for m in members {
                let key = m.key
                segments.append(key)
                do throws(DecodeFailure) {
                    if let v = try member(m.value, depth: memberDepth) { fields.append(MapValue.Field(key: key, value: v)) }
                } catch {
                    throw error.adding(.key(key))
                }
                segments.removeLast()
            }
            return MapValue(sorted: fields)
        }
    }

    /// Handles the value at `segments` (at `depth`): the value to store there, or nil when a sentinel
    /// stores nothing (a transform or a `$delete`).
    mutating func member(_ v: JSONRef, depth: Int) throws(DecodeFailure) -> Value? {
        if v.isObject {
            if let m = v.dollarMember {
                if let name = WireName.parse(m.keyBytes), name.isSentinel { return try sentinel(name, m.value, depth: depth) }
            } else if v.count == 0 {
                leaf()
                return .map(MapValue())
            } else {
                return .map(try map(v, memberDepth: depth + 1))
            }
        }
        let value = try values.value(v, depth: depth)
        leaf()
        return value
    }

    mutating func leaf() {
        if collectLeaves { leaves.append(FieldPath(segments)) }
    }

    mutating func sentinel(_ name: WireName, _ op: JSONRef, depth: Int) throws(DecodeFailure) -> Value? {
        switch name {
        case .delete:
            guard op.bool == true else { throw DecodeFailure("$delete needs the value true") }
            switch deletePolicy {
            case .allow: deletes.append(FieldPath(segments))
            case .reject(let why): throw DecodeFailure(why)
            }
            return nil
        case .documentId:
            guard op.bool == true else { throw DecodeFailure("$documentId needs the value true") }
            leaf()
            return .string(values.documentID ?? "")
        default:
            transforms.append(FieldTransform(field: FieldPath(segments), transform: try transform(name, op, depth: depth)))
            return nil
        }
    }

    func transform(_ name: WireName, _ op: JSONRef, depth: Int) throws(DecodeFailure) -> Transform {
        switch name {
        case .increment: return .increment(try number(name, op))
        case .maximum: return .maximum(try number(name, op))
        case .minimum: return .minimum(try number(name, op))
        case .arrayUnion: return .arrayUnion(try elements(name, op, depth: depth))
        case .arrayRemove: return .arrayRemove(try elements(name, op, depth: depth))
        default:
            guard op.bool == true else { throw DecodeFailure("$serverTimestamp needs the value true") }
            return .serverTimestamp
        }
    }

    func number(_ name: WireName, _ op: JSONRef) throws(DecodeFailure) -> Value {
        if let i = op.int64 { return .int(i) }
        if let d = op.double { return .double(d) }
        if let m = op.dollarMember, WireName.parse(m.keyBytes) == .double { return .double(try values.explicitDouble(m.value)) }
        throw DecodeFailure("\(name.label) needs a number, found \(op.kind.name)")
    }

    /// The operand of `$arrayUnion`/`$arrayRemove`: plain values, no nested arrays, no sentinels.
    func elements(_ name: WireName, _ op: JSONRef, depth: Int) throws(DecodeFailure) -> [Value] {
        guard op.isArray else { throw DecodeFailure("\(name.label) needs an array, found \(op.kind.name)") }
        let n = op.count
        if n > 0 && depth + 1 > values.maxDepth { throw values.tooDeep() }
        let plain = ValueDecoder(allowNestedArrays: false, maxDepth: values.maxDepth, documentID: nil)
        var out: [Value] = []
        out.reserveCapacity(n)
        var i = 0
        for e in op.elements {
            do {
                out.append(try plain.value(e, depth: depth + 1, inArray: true, directlyInArray: true))
            } catch {
                throw error.adding(.index(i)).adding(.raw(name.label))
            }
            i += 1
        }
        return out
    }
}

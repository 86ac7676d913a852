import HearthModel

/// Applies field transforms to a document's fields, with Firestore's rules:
///
/// - `increment`: a non-numeric or missing field becomes the operand; int + int saturates at the Int64 limits;
///   if either side is a double both are added as doubles.
/// - `maximum` / `minimum`: a non-numeric or missing field becomes the operand; equivalent operands (3 and
///   3.0, or any two zeros) leave the field unchanged; otherwise the field takes the larger (smaller) operand,
///   with its type; NaN on either side gives NaN.
/// - `arrayUnion`: a non-array field becomes []; each operand element not already present (3 == 3.0,
///   NaN == NaN) is appended once. `arrayRemove`: every element equal to an operand element is removed.
/// - `serverTimestamp`: the commit time, the same instant for every transform of one commit.
public enum FieldTransformer {
    /// Applies `transforms` in order to `fields`; returns the value each left in its field (null for the
    /// array transforms, as Firestore reports them).
    public static func apply(_ transforms: [FieldTransform], to fields: inout MapValue, commitTime: Timestamp) -> [Value] {
        var results: [Value] = []
        results.reserveCapacity(transforms.count)
        for t in transforms {
            let current = fields.value(at: t.field)
            let (newValue, result) = transform(current, t.transform, commitTime: commitTime)
            fields.set(newValue, at: t.field)
            results.append(result)
        }
        return results
    }

    /// The new field value and the transform result for one transform.
    public static func transform(_ current: Value?, _ t: Transform, commitTime: Timestamp) -> (Value, Value) {
        switch t {
        case .serverTimestamp:
            let v = Value.timestamp(commitTime)
            return (v, v)
        case .increment(let operand):
            let v = increment(current, by: operand)
            return (v, v)
        case .maximum(let operand):
            let v = extreme(current, operand, wantLarger: true)
            return (v, v)
        case .minimum(let operand):
            let v = extreme(current, operand, wantLarger: false)
            return (v, v)
        case .arrayUnion(let elements):
            return (.array(union(current?.arrayValue ?? [], elements)), .null)
        case .arrayRemove(let elements):
            return (.array(remove(elements, from: current?.arrayValue ?? [])), .null)
        }
    }

    /// `array` followed by each element of `elements` equal to none before it. Linear: values are compared
    /// through their `IndexKey` encodings, which are identical exactly when `ValueOrder` calls two values
    /// equal (3 and 3.0, -0.0 and 0.0, any two NaNs), so a hash set replaces the pairwise scan.
    static func union(_ array: [Value], _ elements: [Value]) -> [Value] {
        var out = array
        var present = Set<[UInt8]>(minimumCapacity: array.count + elements.count)
        for v in array { present.insert(IndexKey.key(v)) }
        for e in elements where present.insert(IndexKey.key(e)).inserted {
            out.append(e)
        }
        return out
    }

    /// `array` without every element equal to one of `elements` (linear, as `union`).
    static func remove(_ elements: [Value], from array: [Value]) -> [Value] {
        guard !elements.isEmpty && !array.isEmpty else { return array }
        var removed = Set<[UInt8]>(minimumCapacity: elements.count)
        for e in elements { removed.insert(IndexKey.key(e)) }
        return array.filter { !removed.contains(IndexKey.key($0)) }
    }

    static func increment(_ current: Value?, by operand: Value) -> Value {
        switch (current, operand) {
        case (.int(let a)?, .int(let b)):
            let (sum, overflow) = a.addingReportingOverflow(b)
            if overflow { return .int(b > 0 ? Int64.max : Int64.min) }
            return .int(sum)
        case (.int(let a)?, .double(let b)): return .double(Double(a) + b)
        case (.double(let a)?, .int(let b)): return .double(a + Double(b))
        case (.double(let a)?, .double(let b)): return .double(a + b)
        default: return operand
        }
    }

    static func extreme(_ current: Value?, _ operand: Value, wantLarger: Bool) -> Value {
        guard let current, current.isNumber else { return operand }
        if current.isNaN { return current }
        if operand.isNaN { return operand }
        let c = ValueOrder.compare(operand, current)
        if c == 0 { return current }
        return (c > 0) == wantLarger ? operand : current
    }
}

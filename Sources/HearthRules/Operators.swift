import HearthModel

extension Evaluator {
    func binary(_ op: BinaryOp, _ a: RuleValue, _ b: RuleValue, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        if case .symbolic = a { return try symbolicBinary(op, a, b, pos) }
        if case .symbolic = b { return try symbolicBinary(op, a, b, pos) }
        switch op {
        case .eq: return .bool(RuleValue.equal(a, b))
        case .ne: return .bool(!RuleValue.equal(a, b))
        case .lt, .le, .gt, .ge:
            guard let c = RuleValue.compare(a, b) else {
                throw Evaluator.fail(pos, "cannot compare a \(a.typeName) with a \(b.typeName) using \(op.rawValue)")
            }
            switch op {
            case .lt: return .bool(c < 0)
            case .le: return .bool(c <= 0)
            case .gt: return .bool(c > 0)
            default: return .bool(c >= 0)
            }
        case .in: return .bool(try contains(b, a, pos))
        case .add, .sub, .mul, .div, .mod: return try arithmetic(op, a, b, pos)
        }
    }

    /// `needle in haystack`: a list or set element, or a map key.
    func contains(_ haystack: RuleValue, _ needle: RuleValue, _ pos: SourcePos) throws(EvalError) -> Bool {
        switch haystack {
        case .list(let items): return items.contains { RuleValue.equal($0, needle) }
        case .set(let s): return s.contains(needle)
        case .map(let m):
            guard case .string(let k) = needle else { throw Evaluator.fail(pos, "'in' on a map needs a string key, not a \(needle.typeName)") }
            return m[k] != nil
        default:
            throw Evaluator.fail(pos, "'in' needs a list, set or map on its right, not a \(haystack.typeName)")
        }
    }

    func arithmetic(_ op: BinaryOp, _ a: RuleValue, _ b: RuleValue, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        func overflow() -> EvalError { Evaluator.fail(pos, "integer overflow in \(op.rawValue)") }
        switch (a, b) {
        case (.int(let x), .int(let y)):
            switch op {
            case .add: let (r, o) = x.addingReportingOverflow(y); if o { throw overflow() }; return .int(r)
            case .sub: let (r, o) = x.subtractingReportingOverflow(y); if o { throw overflow() }; return .int(r)
            case .mul: let (r, o) = x.multipliedReportingOverflow(by: y); if o { throw overflow() }; return .int(r)
            case .div:
                guard y != 0 else { throw Evaluator.fail(pos, "division by zero") }
                let (r, o) = x.dividedReportingOverflow(by: y); if o { throw overflow() }; return .int(r)
            default:
                guard y != 0 else { throw Evaluator.fail(pos, "modulo by zero") }
                let (r, o) = x.remainderReportingOverflow(dividingBy: y); if o { throw overflow() }; return .int(r)
            }
        case (.int, .float), (.float, .int), (.float, .float):
            let x = a.asDouble!, y = b.asDouble!
            switch op {
            case .add: return .float(x + y)
            case .sub: return .float(x - y)
            case .mul: return .float(x * y)
            case .div: return .float(x / y)
            default: return .float(x.truncatingRemainder(dividingBy: y))
            }
        case (.string(let x), .string(let y)) where op == .add: return .string(x + y)
        case (.list(let x), .list(let y)) where op == .add: return .list(x + y)
        case (.bytes(let x), .bytes(let y)) where op == .add: return .bytes(x + y)
        case (.timestamp(let t), .duration(let d)) where op == .add || op == .sub:
            return try shift(t, op == .add ? d : -d, pos)
        case (.duration(let d), .timestamp(let t)) where op == .add:
            return try shift(t, d, pos)
        case (.timestamp(let x), .timestamp(let y)) where op == .sub:
            return .duration((x.micros - y.micros) * 1000)
        case (.duration(let x), .duration(let y)) where op == .add || op == .sub:
            let (r, o) = op == .add ? x.addingReportingOverflow(y) : x.subtractingReportingOverflow(y)
            if o { throw overflow() }
            return .duration(r)
        default:
            throw Evaluator.fail(pos, "operator \(op.rawValue) does not apply to a \(a.typeName) and a \(b.typeName)")
        }
    }

    func shift(_ t: Timestamp, _ nanos: Int64, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        let r = Timestamp(micros: t.micros &+ nanos / 1000)
        guard r.isInRange else { throw Evaluator.fail(pos, "timestamp arithmetic leaves the range 0001-01-01..9999-12-31") }
        return .timestamp(r)
    }

    func negate(_ v: RuleValue, _ pos: SourcePos) throws(EvalError) -> RuleValue {
        switch v {
        case .int(let i):
            guard i != .min else { throw Evaluator.fail(pos, "integer overflow in unary -") }
            return .int(-i)
        case .float(let d): return .float(-d)
        case .duration(let d): return .duration(-d)
        case .symbolic(let s): throw undecidable(s, pos)
        default: throw Evaluator.fail(pos, "unary - does not apply to a \(v.typeName)")
        }
    }
}

extension RuleValue {
    var asDouble: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .float(let d): return d
        default: return nil
        }
    }
}

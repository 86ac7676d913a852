import Foundation
import HearthModel

extension Evaluator {
    mutating func builtin(_ b: Builtin, _ args: [CExpr], _ pos: SourcePos) throws(EvalError) -> RuleValue {
        var values: [RuleValue] = []
        values.reserveCapacity(args.count)
        for a in args { values.append(try eval(a)) }
        for v in values { if case .symbolic(let s) = v { throw undecidable(s, pos) } }
        let x = values[0]
        func number(_ v: RuleValue) throws(EvalError) -> Double {
            guard let d = v.asDouble else { throw Evaluator.fail(pos, "\(b.rawValue)() needs a number, not a \(v.typeName)") }
            return d
        }
        func integer(_ v: RuleValue, _ what: String) throws(EvalError) -> Int64 {
            guard case .int(let i) = v else { throw Evaluator.fail(pos, "\(b.rawValue)() needs an int \(what), not a \(v.typeName)") }
            return i
        }
        switch b {
        case .get, .getAfter:
            let path = try documentPath(x, b.rawValue, pos)
            guard let data = try read(path, after: b == .getAfter, b.rawValue, pos) else { return .null }
            return .resource(RuleResource(path: path, data: data))
        case .exists, .existsAfter:
            let path = try documentPath(x, b.rawValue, pos)
            return .bool(try read(path, after: b == .existsAfter, b.rawValue, pos) != nil)
        case .int:
            switch x {
            case .int: return x
            case .float(let d):
                guard d.isFinite, d >= -9.223372036854775808e18, d < 9.223372036854775808e18 else {
                    throw Evaluator.fail(pos, "int(\(d)) is out of range")
                }
                return .int(Int64(d.rounded(.towardZero)))
            case .string(let s):
                guard let i = Int64(s) else { throw Evaluator.fail(pos, "int('\(s)'): not an integer") }
                return .int(i)
            default: throw Evaluator.fail(pos, "int() cannot convert a \(x.typeName)")
            }
        case .float:
            switch x {
            case .int(let i): return .float(Double(i))
            case .float: return x
            case .string(let s):
                guard let d = Double(s) else { throw Evaluator.fail(pos, "float('\(s)'): not a number") }
                return .float(d)
            default: throw Evaluator.fail(pos, "float() cannot convert a \(x.typeName)")
            }
        case .string:
            switch x {
            case .string: return x
            case .int(let i): return .string(String(i))
            case .float(let d): return .string(String(d))
            case .bool(let v): return .string(v ? "true" : "false")
            case .null: return .string("null")
            case .path(let p): return .string(p.description)
            case .timestamp(let t): return .string(t.rfc3339)
            case .bytes(let b): return .string(String(decoding: b, as: UTF8.self))
            default: throw Evaluator.fail(pos, "string() cannot convert a \(x.typeName)")
            }
        case .bool:
            switch x {
            case .bool: return x
            case .string("true"): return .bool(true)
            case .string("false"): return .bool(false)
            default: throw Evaluator.fail(pos, "bool() converts only 'true' and 'false', not \(x.shortDescription)")
            }
        case .path:
            switch x {
            case .path: return x
            case .string(let s): return .path(RulePath(s.split(separator: "/", omittingEmptySubsequences: true).map(String.init)))
            default: throw Evaluator.fail(pos, "path() needs a string, not a \(x.typeName)")
            }
        case .debug: return x
        case .mathAbs:
            switch x {
            case .int(let i):
                guard i != .min else { throw Evaluator.fail(pos, "math.abs overflows") }
                return .int(abs(i))
            case .float(let d): return .float(abs(d))
            default: throw Evaluator.fail(pos, "math.abs() needs a number, not a \(x.typeName)")
            }
        case .mathCeil, .mathFloor, .mathRound:
            if case .int = x { return x }
            let d = try number(x)
            let rule: FloatingPointRoundingRule = b == .mathCeil ? .up : (b == .mathFloor ? .down : .toNearestOrAwayFromZero)
            return .float(d.rounded(rule))
        case .mathSqrt: return .float((try number(x)).squareRoot())
        case .mathPow: return .float(Foundation.pow(try number(x), try number(values[1])))
        case .mathIsNaN:
            guard case .float(let d) = x else { throw Evaluator.fail(pos, "math.isNaN() needs a float, not a \(x.typeName)") }
            return .bool(d.isNaN)
        case .mathIsInfinite:
            guard case .float(let d) = x else { throw Evaluator.fail(pos, "math.isInfinite() needs a float, not a \(x.typeName)") }
            return .bool(d.isInfinite)
        case .timestampDate:
            let y = try integer(x, "year"), m = try integer(values[1], "month"), d = try integer(values[2], "day")
            guard (1...9999).contains(y), (1...12).contains(m), d >= 1, d <= CivilDate.daysIn(month: m, year: y) else {
                throw Evaluator.fail(pos, "timestamp.date(\(y), \(m), \(d)) is not a valid date")
            }
            return .timestamp(Timestamp(micros: CivilDate.days(year: y, month: m, day: d) * 86_400_000_000))
        case .timestampValue:
            let ms = try integer(x, "of milliseconds")
            let (micros, o) = ms.multipliedReportingOverflow(by: 1000)
            let t = Timestamp(micros: micros)
            guard !o, t.isInRange else { throw Evaluator.fail(pos, "timestamp.value(\(ms)) is out of range") }
            return .timestamp(t)
        case .durationValue:
            guard case .string(let unit) = values[1] else { throw Evaluator.fail(pos, "duration.value() needs a unit string") }
            let scale: Double
            switch unit {
            case "w": scale = 604_800e9
            case "d": scale = 86_400e9
            case "h": scale = 3_600e9
            case "m": scale = 60e9
            case "s": scale = 1e9
            case "ms": scale = 1e6
            case "ns": scale = 1
            default: throw Evaluator.fail(pos, "duration unit '\(unit)' is unknown (w, d, h, m, s, ms, ns)")
            }
            if case .int(let n) = x, scale.rounded() == scale {
                let (r, o) = n.multipliedReportingOverflow(by: Int64(scale))
                guard !o else { throw Evaluator.fail(pos, "duration overflows") }
                return .duration(r)
            }
            let r = (try number(x)) * scale
            guard r.isFinite, abs(r) < 9.2e18 else { throw Evaluator.fail(pos, "duration overflows") }
            return .duration(Int64(r))
        case .durationTime:
            let h = try integer(x, "hours"), m = try integer(values[1], "minutes")
            let s = try integer(values[2], "seconds"), ns = try integer(values[3], "nanoseconds")
            return .duration(((h * 60 + m) * 60 + s) * 1_000_000_000 + ns)
        case .durationAbs:
            guard case .duration(let d) = x else { throw Evaluator.fail(pos, "duration.abs() needs a duration") }
            return .duration(abs(d))
        case .latlngValue:
            let lat = try number(x), lng = try number(values[1])
            guard (-90...90).contains(lat), (-180...180).contains(lng) else {
                throw Evaluator.fail(pos, "latlng.value(\(lat), \(lng)) is out of range")
            }
            return .latlng(GeoPoint(latitude: lat, longitude: lng))
        }
    }
}

import Foundation
import HearthModel

extension Evaluator {
    /// A pattern built at run time (or given to `split`/`replace`), compiled for this evaluation; an invalid
    /// one is an evaluation error naming RE2's reason.
    static func regex(_ pattern: String, _ pos: SourcePos) throws(EvalError) -> CompiledRegex {
        do throws(RegexError) {
            return try CompiledRegex(pattern)
        } catch {
            throw Evaluator.fail(pos, "invalid regular expression '\(pattern)': \(error.reason)")
        }
    }

    func method(_ r: RuleValue, _ m: Method, _ args: [RuleValue], _ pos: SourcePos) throws(EvalError) -> RuleValue {
        if case .symbolic(let s) = r {
            if m == .get, case .data(let segs) = s, args.count == 2 {
                let key = try keyPath(args[0], pos)
                let v = try resolveData(segs + key, pos, missingOK: true)
                return v ?? args[1]
            }
            throw undecidable(s, pos)
        }
        for a in args { if case .symbolic(let s) = a { throw undecidable(s, pos) } }
        func wrong() -> EvalError { Evaluator.fail(pos, "\(m.rawValue)() does not apply to a \(r.typeName)") }
        func stringArg(_ i: Int) throws(EvalError) -> String {
            guard case .string(let s) = args[i] else { throw Evaluator.fail(pos, "\(m.rawValue)() needs a string argument, not a \(args[i].typeName)") }
            return s
        }
        func elements(_ v: RuleValue) throws(EvalError) -> [RuleValue] {
            switch v {
            case .list(let items): return items
            case .set(let s): return s.items
            default: throw Evaluator.fail(pos, "\(m.rawValue)() needs a list or set argument, not a \(v.typeName)")
            }
        }
        switch (m, r) {
        // strings
        case (.size, .string(let s)): return .int(Int64(s.unicodeScalars.count))
        case (.size, .bytes(let b)): return .int(Int64(b.count))
        case (.lower, .string(let s)): return .string(s.lowercased())
        case (.upper, .string(let s)): return .string(s.uppercased())
        case (.trim, .string(let s)): return .string(s.trimmingCharacters(in: .whitespaces))
        case (.toUtf8, .string(let s)): return .bytes(Array(s.utf8))
        case (.matches, .string(let s)):
            let pattern = try stringArg(0)
            let re = try Self.regex(pattern, pos)
            return .bool(re.fullMatch(s))
        case (.split, .string(let s)):
            let pattern = try stringArg(0)
            let re = try Self.regex(pattern, pos)
            return .list(re.split(s).map(RuleValue.string))
        case (.replace, .string(let s)):
            let pattern = try stringArg(0), replacement = try stringArg(1)
            let re = try Self.regex(pattern, pos)
            do throws(RegexError) {
                return .string(try re.replaceAll(s, with: replacement))
            } catch {
                throw Evaluator.fail(pos, "invalid replacement '\(replacement)': \(error.reason)")
            }

        // lists and sets
        case (.size, .list(let items)): return .int(Int64(items.count))
        case (.size, .set(let set)): return .int(Int64(set.items.count))
        case (.size, .map(let map)): return .int(Int64(map.count))
        case (.hasAll, .list), (.hasAll, .set):
            let mine = RuleMembership(try elements(r))
            return .bool(try elements(args[0]).allSatisfy { mine.contains($0) })
        case (.hasAny, .list), (.hasAny, .set):
            let mine = RuleMembership(try elements(r))
            return .bool(try elements(args[0]).contains { mine.contains($0) })
        case (.hasOnly, .list), (.hasOnly, .set):
            let allowed = RuleMembership(try elements(args[0]))
            return .bool(try elements(r).allSatisfy { allowed.contains($0) })
        case (.join, .list(let items)):
            let sep = args.isEmpty ? "" : try stringArg(0)
            var parts: [String] = []
            for i in items {
                guard case .string(let s) = i else { throw Evaluator.fail(pos, "join() needs a list of strings, found a \(i.typeName)") }
                parts.append(s)
            }
            return .string(parts.joined(separator: sep))
        case (.concat, .list(let items)):
            guard case .list(let more) = args[0] else { throw Evaluator.fail(pos, "concat() needs a list") }
            return .list(items + more)
        case (.removeAll, .list(let items)):
            let drop = RuleMembership(try elements(args[0]))
            return .list(items.filter { !drop.contains($0) })
        case (.toSet, .list(let items)): return .set(RuleSet(items))
        case (.difference, .set(let s)):
            guard case .set(let o) = args[0] else { throw Evaluator.fail(pos, "difference() needs a set") }
            return .set(RuleSet(s.items.filter { !o.contains($0) }))
        case (.intersection, .set(let s)):
            guard case .set(let o) = args[0] else { throw Evaluator.fail(pos, "intersection() needs a set") }
            return .set(RuleSet(s.items.filter { o.contains($0) }))
        case (.union, .set(let s)):
            guard case .set(let o) = args[0] else { throw Evaluator.fail(pos, "union() needs a set") }
            return .set(RuleSet(s.items + o.items))

        // maps
        case (.keys, .map(let map)): return .list(map.keys.map(RuleValue.string))
        case (.values, .map(let map)): return .list(map.entries.map(\.value))
        case (.get, .map(let map)):
            let key = try keyPath(args[0], pos)
            var current: RuleValue = .map(map)
            for k in key {
                guard case .map(let inner) = current, let next = inner[k] else { return args[1] }
                current = next
            }
            return current
        case (.diff, .map(let map)):
            guard case .map(let other) = args[0] else { throw Evaluator.fail(pos, "diff() needs a map, not a \(args[0].typeName)") }
            return .mapDiff(RuleMapDiff(map, other))
        case (.affectedKeys, .mapDiff(let d)): return .set(d.affectedKeys)
        case (.addedKeys, .mapDiff(let d)): return .set(d.addedKeys)
        case (.removedKeys, .mapDiff(let d)): return .set(d.removedKeys)
        case (.changedKeys, .mapDiff(let d)): return .set(d.changedKeys)
        case (.unchangedKeys, .mapDiff(let d)): return .set(d.unchangedKeys)

        // timestamps and durations
        case (.toMillis, .timestamp(let t)): return .int(t.micros >= 0 ? t.micros / 1000 : -((-t.micros + 999) / 1000))
        case (.date, .timestamp(let t)): return .timestamp(Timestamp(micros: Evaluator.day(t) * 86_400_000_000))
        case (.time, .timestamp(let t)): return .duration((t.micros - Evaluator.day(t) * 86_400_000_000) * 1000)
        case (.year, .timestamp(let t)): return .int(CivilDate.date(days: Evaluator.day(t)).year)
        case (.month, .timestamp(let t)): return .int(CivilDate.date(days: Evaluator.day(t)).month)
        case (.day, .timestamp(let t)): return .int(CivilDate.date(days: Evaluator.day(t)).day)
        case (.dayOfWeek, .timestamp(let t)):
            // 1970-01-01 was a Thursday; Monday is 1 and Sunday 7.
            let d = Evaluator.day(t)
            return .int(((d % 7 + 7 + 3) % 7) + 1)
        case (.dayOfYear, .timestamp(let t)):
            let d = Evaluator.day(t)
            return .int(d - CivilDate.days(year: CivilDate.date(days: d).year, month: 1, day: 1) + 1)
        case (.hours, .timestamp(let t)): return .int(Evaluator.secondOfDay(t) / 3600)
        case (.minutes, .timestamp(let t)): return .int(Evaluator.secondOfDay(t) / 60 % 60)
        case (.seconds, .timestamp(let t)): return .int(Evaluator.secondOfDay(t) % 60)
        case (.nanos, .timestamp(let t)): return .int(t.microsOfSecond * 1000)
        case (.seconds, .duration(let d)): return .int(d / 1_000_000_000)
        case (.nanos, .duration(let d)): return .int(d % 1_000_000_000)
        default:
            throw wrong()
        }
    }

    static func day(_ t: Timestamp) -> Int64 { t.seconds >= 0 ? t.seconds / 86_400 : -((-t.seconds + 86_399) / 86_400) }
    static func secondOfDay(_ t: Timestamp) -> Int64 { t.seconds - day(t) * 86_400 }

    /// A map key for `get`: a string, or a list of strings (a nested path).
    func keyPath(_ v: RuleValue, _ pos: SourcePos) throws(EvalError) -> [String] {
        switch v {
        case .string(let s): return [s]
        case .list(let items):
            var out: [String] = []
            for i in items {
                guard case .string(let s) = i else { throw Evaluator.fail(pos, "get() needs a key string or a list of key strings") }
                out.append(s)
            }
            return out
        default: throw Evaluator.fail(pos, "get() needs a key string or a list of key strings, not a \(v.typeName)")
        }
    }
}

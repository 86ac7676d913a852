import HearthModel
import HearthProtocol
import HearthRules

/// Who a forwarded request speaks for (`{"op":"forward","as":…,"request":"<line>"}`): while rules are enforced,
/// a follower sends each client's write to the committer inside a `forward` op on its link, which it opened as
/// the admin (`hello` with the cluster's admin key), naming the client's identity; the committer runs the
/// request as that identity, for that request only (`Dispatcher.forwarded`). `as` is `"admin"`, `null`
/// (anonymous), or `{"uid","token":{claims}}` as the follower verified them, the same form as `hello`'s `as`.
enum ForwardedIdentity {
    static func write(_ p: Principal, into w: inout JSONWriter) {
        switch p {
        case .admin: w.string("admin")
        case .anonymous, .expired: w.null()
        case .user(let auth, _):
            w.beginObject()
            w.key("uid"); w.string(auth.uid)
            w.key("token"); plain(.map(auth.token), into: &w)
            w.endObject()
        }
    }

    /// A claim as plain JSON (claims come from a token's JSON; anything else is written as text).
    private static func plain(_ v: Value, into w: inout JSONWriter) {
        switch v {
        case .null: w.null()
        case .bool(let b): w.bool(b)
        case .int(let i): w.int(i)
        case .double(let d): w.double(d)
        case .string(let s): w.string(s)
        case .timestamp(let t): w.string(t.rfc3339)
        case .array(let a):
            w.beginArray()
            for e in a { plain(e, into: &w) }
            w.endArray()
        case .map(let m):
            w.beginObject()
            for f in m.fields {
                w.key(f.key)
                plain(f.value, into: &w)
            }
            w.endObject()
        case .bytes, .reference, .geoPoint: w.string("\(v)")
        }
    }

    /// The identity a `forward` op names.
    static func principal(_ a: JSONRef?) throws(HearthError) -> Principal {
        guard let a, a.kind != .null else { return .anonymous }
        if a.kind == .string {
            guard a.string == "admin" else { throw .invalid("field \"as\" must be \"admin\", null or {\"uid\",\"token\"}") }
            return .admin
        }
        return try AuthHandlers.impersonated(a)
    }
}

import HearthCrypto
import HearthModel
import HearthProtocol

/// One verification key of a JWKS: its `kid` (if it has one), the one algorithm it verifies, the key.
public struct JSONWebKey: Sendable {
    public let keyID: String?
    public let algorithm: SignatureAlgorithm
    public let key: SignatureKey

    public init(keyID: String?, key: SignatureKey) {
        self.keyID = keyID
        self.algorithm = key.kind.algorithm
        self.key = key
    }
}

/// A JSON Web Key Set (RFC 7517 §5) of public keys, as identity providers publish at their `jwks_uri`:
/// `{"keys":[{"kty":"RSA","kid":"k1","alg":"RS256","use":"sig","n":"...","e":"AQAB"}, {"kty":"EC","crv":"P-256",
/// "kid":"k2","x":"...","y":"..."}]}`.
///
/// Accepted: `kty` RSA (`n`, `e`; at least 2048 bits) and EC with `crv` P-256 (`x`, `y`, 32 bytes each), with
/// `alg` RS256 / ES256 or no `alg` (then it follows from the key type). Entries meant for something else are
/// skipped and listed in `skipped` (the daemon logs them): `use` other than `sig`, `key_ops` without
/// `verify`, another `alg` (RS512, ...), another key type or curve (`oct`, `OKP`, P-384, ...). An entry that
/// claims to be usable but is broken (bad base64url, a point not on the curve, `alg` that contradicts
/// `kty`), or two entries with the same `kid`, make the whole set an error, as does a set with no usable key.
public struct JSONWebKeySet: Sendable {
    public let keys: [JSONWebKey]
    /// One line per skipped entry: `keys[2] (kid "x"): use "enc" is not for signatures`.
    public let skipped: [String]

    public init(keys: [JSONWebKey], skipped: [String] = []) {
        self.keys = keys
        self.skipped = skipped
    }

    /// The largest JWKS file read.
    public static let fileLimit = 1 << 20

    /// Reads and parses a JWKS file; errors name the file.
    public static func load(file path: String) throws(AuthConfigError) -> JSONWebKeySet {
        let bytes = try SecretFile.read(path, limit: fileLimit)
        do {
            return try parse(bytes)
        } catch {
            throw AuthConfigError("\(path): \(error.message)")
        }
    }

    /// Parses a JWKS document.
    public static func parse(_ bytes: [UInt8]) throws(AuthConfigError) -> JSONWebKeySet {
        let parser = JSONParser()
        return try withExtendedLifetime(parser) { () throws(AuthConfigError) -> JSONWebKeySet in
            let root: JSONRef
            do throws(HearthError) {
                root = try parser.parse(bytes)
            } catch {
                throw AuthConfigError("not a JWKS: \(error.message)")
            }
            guard let list = root["keys"], list.isArray else {
                throw AuthConfigError("not a JWKS: expected an object with a \"keys\" array")
            }
            var keys: [JSONWebKey] = []
            var skipped: [String] = []
            for (i, entry) in list.elements.enumerated() {
                switch try parseEntry(entry, index: i) {
                case .key(let k):
                    if let id = k.keyID, keys.contains(where: { $0.keyID == id }) {
                        throw AuthConfigError("keys[\(i)]: kid \(TokenError.quote(id)) appears twice")
                    }
                    keys.append(k)
                case .skip(let why):
                    skipped.append(why)
                }
            }
            guard !keys.isEmpty else {
                let why = skipped.isEmpty ? "the \"keys\" array is empty" : skipped.joined(separator: "; ")
                throw AuthConfigError("no RS256 or ES256 key in the JWKS (\(why))")
            }
            return JSONWebKeySet(keys: keys, skipped: skipped)
        }
    }

    private enum Entry {
        case key(JSONWebKey)
        case skip(String)
    }

    private static func parseEntry(_ entry: JSONRef, index i: Int) throws(AuthConfigError) -> Entry {
        guard entry.isObject else { throw AuthConfigError("keys[\(i)]: expected an object, got \(entry.kind.withArticle)") }
        var name = "keys[\(i)]"
        var kid: String?
        if let k = entry["kid"] {
            guard let s = k.string else { throw AuthConfigError("\(name): kid must be a string, got \(k.kind.withArticle)") }
            kid = s
            name += " (kid \(TokenError.quote(s)))"
        }
        func text(_ field: String) throws(AuthConfigError) -> String? {
            guard let v = entry[field] else { return nil }
            guard let s = v.string else { throw AuthConfigError("\(name): \(field) must be a string, got \(v.kind.withArticle)") }
            return s
        }
        func component(_ field: String) throws(AuthConfigError) -> [UInt8] {
            guard let s = try text(field) else { throw AuthConfigError("\(name): \(field) is missing") }
            guard let b = Base64URL.decode(s), !b.isEmpty else {
                throw AuthConfigError("\(name): \(field) is not unpadded base64url")
            }
            return b
        }
        guard let kty = try text("kty") else { throw AuthConfigError("\(name): kty is missing") }
        if let use = try text("use"), use != "sig" {
            return .skip("\(name): use \(TokenError.quote(use)) is not for signatures")
        }
        if let ops = entry["key_ops"] {
            guard ops.isArray else { throw AuthConfigError("\(name): key_ops must be an array, got \(ops.kind.withArticle)") }
            if !ops.elements.contains(where: { $0.stringEquals("verify") }) {
                return .skip("\(name): key_ops does not include \"verify\"")
            }
        }
        let alg = try text("alg")
        let expected: SignatureAlgorithm
        switch kty {
        case "RSA": expected = .rs256
        case "EC":
            let crv = try text("crv")
            guard crv == "P-256" else {
                if alg == "ES256" { throw AuthConfigError("\(name): alg ES256 needs crv P-256, got \(crv.map(TokenError.quote) ?? "none")") }
                return .skip("\(name): curve \(crv.map(TokenError.quote) ?? "(none)") is not supported (only P-256)")
            }
            expected = .es256
        default:
            return .skip("\(name): kty \(TokenError.quote(kty)) is not supported (only RSA and EC)")
        }
        if let alg, alg != expected.rawValue {
            if SignatureAlgorithm(rawValue: alg) != nil {
                throw AuthConfigError("\(name): alg \(alg) does not fit kty \(kty) (expected \(expected.rawValue))")
            }
            return .skip("\(name): alg \(TokenError.quote(alg)) is not supported (only RS256 and ES256)")
        }
        let key: SignatureKey
        if expected == .rs256 {
            let n = try component("n"), e = try component("e")
            do { key = try SignatureKey.rsaPublic(modulus: n, exponent: e) } catch { throw AuthConfigError("\(name): \(error.message)") }
        } else {
            let x = try component("x"), y = try component("y")
            do { key = try SignatureKey.ecPublic(x: x, y: y) } catch { throw AuthConfigError("\(name): \(error.message)") }
        }
        return .key(JSONWebKey(keyID: kid, key: key))
    }
}

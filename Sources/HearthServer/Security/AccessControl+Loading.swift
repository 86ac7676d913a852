import Foundation
import HearthAuth
import HearthModel

extension AccessControl {
    /// The token verifier `--auth-secret-file` / `--auth-jwks` (and `--auth-issuer`, `--auth-audience`)
    /// describe; nil when neither file is given.
    static func loadVerifier(_ s: SecuritySettings) throws(HearthError) -> TokenVerifier? {
        guard s.authSecretFile != nil || s.authJWKSFile != nil else {
            if s.authIssuer != nil || s.authAudience != nil {
                throw .invalid("--auth-issuer and --auth-audience need --auth-secret-file or --auth-jwks")
            }
            return nil
        }
        let secret = try s.authSecretFile.map { (f) throws(HearthError) in [UInt8](try readFile(f, what: "the token secret")) }
        let jwks = try s.authJWKSFile.map { (f) throws(HearthError) in [UInt8](try readFile(f, what: "the JWKS file")) }
        do {
            return try TokenVerifier(secret: secret, jwks: jwks, issuer: s.authIssuer, audience: s.authAudience)
        } catch {
            throw .invalid("tokens: \(error.message)")
        }
    }

    static func loadAdminKey(_ s: SecuritySettings) throws(HearthError) -> AdminKey? {
        guard let file = s.adminKeyFile else { return nil }
        let bytes = [UInt8](try readFile(file, what: "the admin key file"))
        do { return try AdminKey(bytes) } catch { throw .invalid("--admin-key-file \(file): \(error.message)") }
    }
}

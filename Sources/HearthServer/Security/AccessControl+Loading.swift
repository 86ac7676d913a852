import HearthAuth
import HearthModel

extension AccessControl {
    /// The token verifier `--auth-secret-file` / `--auth-jwks` (with `--auth-issuer`, `--auth-audience`,
    /// `--auth-clock-skew`) describe; nil when neither file is given.
    static func loadVerifier(_ s: SecuritySettings) throws(HearthError) -> TokenVerifier? {
        guard s.authSecretFile != nil || s.authJWKSFile != nil else {
            if s.authIssuer != nil || s.authAudience != nil {
                throw .invalid("--auth-issuer and --auth-audience need --auth-secret-file or --auth-jwks")
            }
            return nil
        }
        do {
            return try TokenVerifier.load(secretFile: s.authSecretFile, jwksFile: s.authJWKSFile, issuer: s.authIssuer,
                                          audience: s.authAudience, clockSkew: s.authClockSkewSeconds)
        } catch {
            throw .invalid("tokens: \(error.message)")
        }
    }

    static func loadAdminKey(_ s: SecuritySettings) throws(HearthError) -> AdminKey? {
        guard let file = s.adminKeyFile else { return nil }
        do { return try AdminKey.load(file: file) } catch { throw .invalid("--admin-key-file: \(error.message)") }
    }
}

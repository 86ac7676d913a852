// Signature verification for tokens (JWS): HS256 (HMAC-SHA256), RS256 (RSASSA-PKCS1-v1_5 with SHA-256) and
// ES256 (ECDSA on P-256 with SHA-256), with OpenSSL 3's EVP primitives; and a constant-time comparison of
// secrets. Only HearthCrypto's Signature*.swift files call this.
//
// Keys are opaque handles: create one from a secret, from JWK components or from PEM, use it from any
// number of threads at once (every verification makes its own context), free it once with
// hearth_verify_key_free. A key verifies only the one algorithm that fits its type (an HMAC key only HS256,
// an RSA key only RS256, a P-256 key only ES256), so a token cannot pick how its key is used.
#ifndef HEARTH_VERIFY_H
#define HEARTH_VERIFY_H

#include <stddef.h>
#include <stdint.h>

typedef struct hearth_verify_key hearth_verify_key;

typedef enum {
    HEARTH_KEY_HMAC = 1,
    HEARTH_KEY_RSA = 2,
    HEARTH_KEY_EC_P256 = 3,
} hearth_key_type;

typedef enum {
    HEARTH_ALG_HS256 = 1,
    HEARTH_ALG_RS256 = 2,
    HEARTH_ALG_ES256 = 3,
} hearth_sig_alg;

/// The smallest RSA modulus accepted, in bits (RFC 7518 §3.3).
#define HEARTH_RSA_MIN_BITS 2048

/// An HMAC-SHA256 key holding a copy of `secret` (wiped when freed). NULL on failure, with a reason in `err`.
hearth_verify_key *hearth_verify_key_hmac(const uint8_t *secret, size_t secret_len, char *err, size_t err_len);

/// An RSA public key from its big-endian modulus and exponent (a JWK's decoded `n` and `e`). The modulus
/// must have at least HEARTH_RSA_MIN_BITS bits.
hearth_verify_key *hearth_verify_key_rsa(const uint8_t *n, size_t n_len, const uint8_t *e, size_t e_len,
                                         char *err, size_t err_len);

/// A P-256 public key from its affine coordinates (a JWK's decoded `x` and `y`, 32 bytes each); the point
/// must lie on the curve.
hearth_verify_key *hearth_verify_key_ec_p256(const uint8_t *x, size_t x_len, const uint8_t *y, size_t y_len,
                                             char *err, size_t err_len);

/// An RSA or P-256 public key from a PEM SubjectPublicKeyInfo ("-----BEGIN PUBLIC KEY-----").
hearth_verify_key *hearth_verify_key_pem(const char *pem, size_t pem_len, char *err, size_t err_len);

void hearth_verify_key_free(hearth_verify_key *key);

hearth_key_type hearth_verify_key_type(const hearth_verify_key *key);

/// The key's size in bits (the secret's length × 8 for HMAC, the modulus for RSA, 256 for P-256).
int hearth_verify_key_bits(const hearth_verify_key *key);

/// 1 when `sig` is a valid signature of `msg` under `key` with `alg`; 0 when it is not, when `alg` does not
/// fit the key's type, or when `sig` has the wrong length or form. ES256 signatures are JWS's raw r||s
/// (64 bytes), converted to DER here.
int hearth_verify(const hearth_verify_key *key, hearth_sig_alg alg, const uint8_t *msg, size_t msg_len,
                  const uint8_t *sig, size_t sig_len);

/// 1 when the two byte strings are equal. The time taken depends only on the two lengths, never on the
/// contents: both are hashed with SHA-256 and the digests compared with CRYPTO_memcmp.
int hearth_secret_equal(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len);

#endif

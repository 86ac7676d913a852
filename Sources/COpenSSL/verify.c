#include "hearth_verify.h"

#include <openssl/bn.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <string.h>

struct hearth_verify_key {
    hearth_key_type type;
    int bits;
    EVP_PKEY *pkey;   /* RSA and P-256 keys */
    EVP_MAC *mac;     /* HMAC keys: the fetched algorithm ... */
    uint8_t *secret;  /* ... and a private copy of the secret, wiped when freed */
    size_t secret_len;
};

/* Writes `what` and OpenSSL's newest queued error (if any) into err, then empties the thread's error queue. */
static void fail(char *err, size_t err_len, const char *what) {
    if (err && err_len > 0) {
        unsigned long e = ERR_peek_last_error();
        if (e != 0) {
            char reason[200];
            ERR_error_string_n(e, reason, sizeof reason);
            snprintf(err, err_len, "%s (%s)", what, reason);
        } else {
            snprintf(err, err_len, "%s", what);
        }
    }
    ERR_clear_error();
}

static hearth_verify_key *new_key(hearth_key_type type) {
    hearth_verify_key *key = OPENSSL_zalloc(sizeof *key);
    if (key) key->type = type;
    return key;
}

void hearth_verify_key_free(hearth_verify_key *key) {
    if (!key) return;
    EVP_PKEY_free(key->pkey);
    EVP_MAC_free(key->mac);
    if (key->secret) OPENSSL_clear_free(key->secret, key->secret_len);
    OPENSSL_free(key);
}

hearth_key_type hearth_verify_key_type(const hearth_verify_key *key) { return key->type; }

int hearth_verify_key_bits(const hearth_verify_key *key) { return key->bits; }

hearth_verify_key *hearth_verify_key_hmac(const uint8_t *secret, size_t secret_len, char *err, size_t err_len) {
    if (secret_len == 0) {
        fail(err, err_len, "the HMAC secret is empty");
        return NULL;
    }
    hearth_verify_key *key = new_key(HEARTH_KEY_HMAC);
    if (!key) {
        fail(err, err_len, "out of memory");
        return NULL;
    }
    key->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    key->secret = OPENSSL_malloc(secret_len);
    if (!key->mac || !key->secret) {
        hearth_verify_key_free(key);
        fail(err, err_len, "cannot set up HMAC-SHA256");
        return NULL;
    }
    memcpy(key->secret, secret, secret_len);
    key->secret_len = secret_len;
    key->bits = secret_len > (size_t)(INT32_MAX / 8) ? INT32_MAX : (int)(secret_len * 8);
    return key;
}

/* Builds a public key of `type_name` ("RSA", "EC") from params and checks it (EVP_PKEY_public_check). */
static EVP_PKEY *public_key_from_params(const char *type_name, OSSL_PARAM *params, char *err, size_t err_len) {
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type_name, NULL);
    if (!ctx || EVP_PKEY_fromdata_init(ctx) != 1 || EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) {
        EVP_PKEY_CTX_free(ctx);
        fail(err, err_len, "the key's components do not make a valid public key");
        return NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    int ok = check && EVP_PKEY_public_check(check) == 1;
    EVP_PKEY_CTX_free(check);
    if (!ok) {
        EVP_PKEY_free(pkey);
        fail(err, err_len, "the public key fails OpenSSL's validity check");
        return NULL;
    }
    return pkey;
}

/* Wraps a checked RSA or P-256 EVP_PKEY (taking ownership), or frees it and fails. */
static hearth_verify_key *wrap_public(EVP_PKEY *pkey, char *err, size_t err_len) {
    hearth_key_type type;
    if (EVP_PKEY_is_a(pkey, "RSA")) {
        int bits = EVP_PKEY_get_bits(pkey);
        if (bits < HEARTH_RSA_MIN_BITS) {
            char what[96];
            snprintf(what, sizeof what, "the RSA key has %d bits, fewer than the %d required", bits, HEARTH_RSA_MIN_BITS);
            EVP_PKEY_free(pkey);
            fail(err, err_len, what);
            return NULL;
        }
        type = HEARTH_KEY_RSA;
    } else if (EVP_PKEY_is_a(pkey, "EC")) {
        char group[64] = {0};
        size_t group_len = 0;
        if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &group_len) != 1
            || strcmp(group, "prime256v1") != 0) {
            char what[128];
            snprintf(what, sizeof what, "the EC key's curve is %s, not P-256", group[0] ? group : "unknown");
            EVP_PKEY_free(pkey);
            fail(err, err_len, what);
            return NULL;
        }
        type = HEARTH_KEY_EC_P256;
    } else {
        EVP_PKEY_free(pkey);
        fail(err, err_len, "the key is neither RSA nor EC P-256");
        return NULL;
    }
    hearth_verify_key *key = new_key(type);
    if (!key) {
        EVP_PKEY_free(pkey);
        fail(err, err_len, "out of memory");
        return NULL;
    }
    key->pkey = pkey;
    key->bits = EVP_PKEY_get_bits(pkey);
    return key;
}

hearth_verify_key *hearth_verify_key_rsa(const uint8_t *n, size_t n_len, const uint8_t *e, size_t e_len,
                                         char *err, size_t err_len) {
    if (n_len == 0 || e_len == 0 || n_len > 2048 || e_len > 512) {
        fail(err, err_len, "the RSA modulus or exponent is empty or too long");
        return NULL;
    }
    BIGNUM *bn_n = BN_bin2bn(n, (int)n_len, NULL);
    BIGNUM *bn_e = BN_bin2bn(e, (int)e_len, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    if (bn_n && bn_e && bld && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n)
        && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e)) {
        params = OSSL_PARAM_BLD_to_param(bld);
    }
    EVP_PKEY *pkey = NULL;
    if (params) {
        pkey = public_key_from_params("RSA", params, err, err_len);
    } else {
        fail(err, err_len, "out of memory");
    }
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    return pkey ? wrap_public(pkey, err, err_len) : NULL;
}

hearth_verify_key *hearth_verify_key_ec_p256(const uint8_t *x, size_t x_len, const uint8_t *y, size_t y_len,
                                             char *err, size_t err_len) {
    if (x_len != 32 || y_len != 32) {
        fail(err, err_len, "a P-256 coordinate must be 32 bytes");
        return NULL;
    }
    unsigned char point[65];
    point[0] = POINT_CONVERSION_UNCOMPRESSED;
    memcpy(point + 1, x, 32);
    memcpy(point + 33, y, 32);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    if (bld && OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0)
        && OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point)) {
        params = OSSL_PARAM_BLD_to_param(bld);
    }
    EVP_PKEY *pkey = NULL;
    if (params) {
        pkey = public_key_from_params("EC", params, err, err_len);
    } else {
        fail(err, err_len, "out of memory");
    }
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    return pkey ? wrap_public(pkey, err, err_len) : NULL;
}

hearth_verify_key *hearth_verify_key_pem(const char *pem, size_t pem_len, char *err, size_t err_len) {
    if (pem_len == 0 || pem_len > 64 * 1024) {
        fail(err, err_len, "the PEM text is empty or longer than 64 KiB");
        return NULL;
    }
    BIO *bio = BIO_new_mem_buf(pem, (int)pem_len);
    EVP_PKEY *pkey = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    if (!pkey) {
        fail(err, err_len, "no PEM public key (-----BEGIN PUBLIC KEY-----) could be read");
        return NULL;
    }
    EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    int ok = check && EVP_PKEY_public_check(check) == 1;
    EVP_PKEY_CTX_free(check);
    if (!ok) {
        EVP_PKEY_free(pkey);
        fail(err, err_len, "the public key fails OpenSSL's validity check");
        return NULL;
    }
    return wrap_public(pkey, err, err_len);
}

static int verify_hmac(const hearth_verify_key *key, const uint8_t *msg, size_t msg_len,
                       const uint8_t *sig, size_t sig_len) {
    if (sig_len != 32) return 0;
    unsigned char mac[EVP_MAX_MD_SIZE];
    size_t mac_len = 0;
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(key->mac);
    int ok = ctx && EVP_MAC_init(ctx, key->secret, key->secret_len, params) == 1
        && EVP_MAC_update(ctx, msg, msg_len) == 1 && EVP_MAC_final(ctx, mac, &mac_len, sizeof mac) == 1
        && mac_len == 32;
    ok = ok && CRYPTO_memcmp(mac, sig, 32) == 0;
    EVP_MAC_CTX_free(ctx);
    OPENSSL_cleanse(mac, sizeof mac);
    return ok;
}

static int verify_digest(EVP_PKEY *pkey, const uint8_t *msg, size_t msg_len, const uint8_t *sig, size_t sig_len) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestVerifyInit_ex(ctx, NULL, "SHA256", NULL, NULL, pkey, NULL) == 1
        && EVP_DigestVerify(ctx, sig, sig_len, msg, msg_len) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

/* JWS carries an ES256 signature as r||s, 32 bytes each; OpenSSL verifies the DER ECDSA-Sig-Value. */
static int verify_es256(EVP_PKEY *pkey, const uint8_t *msg, size_t msg_len, const uint8_t *sig, size_t sig_len) {
    if (sig_len != 64) return 0;
    ECDSA_SIG *ecdsa = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, 32, NULL);
    BIGNUM *s = BN_bin2bn(sig + 32, 32, NULL);
    if (!ecdsa || !r || !s || ECDSA_SIG_set0(ecdsa, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(ecdsa);
        return 0;
    }
    unsigned char *der = NULL;
    int der_len = i2d_ECDSA_SIG(ecdsa, &der);
    int ok = der_len > 0 && verify_digest(pkey, msg, msg_len, der, (size_t)der_len);
    OPENSSL_free(der);
    ECDSA_SIG_free(ecdsa);
    return ok;
}

int hearth_verify(const hearth_verify_key *key, hearth_sig_alg alg, const uint8_t *msg, size_t msg_len,
                  const uint8_t *sig, size_t sig_len) {
    int ok = 0;
    if (alg == HEARTH_ALG_HS256 && key->type == HEARTH_KEY_HMAC) {
        ok = verify_hmac(key, msg, msg_len, sig, sig_len);
    } else if (alg == HEARTH_ALG_RS256 && key->type == HEARTH_KEY_RSA) {
        ok = verify_digest(key->pkey, msg, msg_len, sig, sig_len);
    } else if (alg == HEARTH_ALG_ES256 && key->type == HEARTH_KEY_EC_P256) {
        ok = verify_es256(key->pkey, msg, msg_len, sig, sig_len);
    }
    ERR_clear_error();
    return ok;
}

int hearth_secret_equal(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len) {
    unsigned char da[32], db[32];
    unsigned int la = 0, lb = 0;
    if (EVP_Digest(a, a_len, da, &la, EVP_sha256(), NULL) != 1 || EVP_Digest(b, b_len, db, &lb, EVP_sha256(), NULL) != 1
        || la != 32 || lb != 32) {
        ERR_clear_error();
        return 0;
    }
    int same_length = a_len == b_len;
    int same_digest = CRYPTO_memcmp(da, db, 32) == 0;
    return same_length & same_digest;
}

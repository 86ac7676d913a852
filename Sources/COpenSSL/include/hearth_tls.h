// TLS over memory BIOs (tls.c): a TLS endpoint that never touches a socket. The caller feeds it the bytes
// read from the peer and sends the bytes it produces; plaintext goes in and out through plain calls. Only
// HearthCrypto calls these (its TLSContext and TLSSession); see docs/security.md.
//
// Ownership: a context is reference counted by OpenSSL; every endpoint made from it holds its own reference, so
// freeing the context while endpoints live is safe. An endpoint is used by one thread at a time.
#ifndef HEARTH_TLS_H
#define HEARTH_TLS_H

#include <stddef.h>

typedef struct hearth_tls_ctx hearth_tls_ctx;
typedef struct hearth_tls hearth_tls;

/// What a context is made from. Strings may be NULL (not given).
typedef struct {
    /// 1: accepts connections; 0: opens them.
    int is_server;
    /// PEM certificate chain (leaf first) and its PEM private key. Required for a server; a client presents
    /// them when the server asks (mutual TLS).
    const char *cert_file;
    const char *key_file;
    /// PEM CA certificates. Server: client certificates are required and verified against it. Client: the
    /// server's certificate is verified against it (NULL: the system's default trust store).
    const char *ca_file;
    /// Client only: 0 turns off certificate and host name verification (never the default).
    int verify_peer;
} hearth_tls_ctx_config;

/// Makes a context: TLS 1.2 minimum, the default cipher list below, no renegotiation, session resumption
/// (server: session cache and tickets; client: the newest session per context is offered again). On failure
/// returns NULL and writes a sentence naming the file and OpenSSL's reason into `err`.
hearth_tls_ctx *hearth_tls_ctx_new(const hearth_tls_ctx_config *config, char *err, size_t err_len);
void hearth_tls_ctx_free(hearth_tls_ctx *ctx);
/// The subject of the context's own certificate (RFC 2253), or 0 bytes when it has none. Returns its length.
size_t hearth_tls_ctx_subject(hearth_tls_ctx *ctx, char *buf, size_t cap);
/// The notAfter of the context's own certificate as text ("Jan  1 00:00:00 2030 GMT"), or 0 bytes.
size_t hearth_tls_ctx_not_after(hearth_tls_ctx *ctx, char *buf, size_t cap);

/// TLS 1.2 suites offered and accepted (TLS 1.3 uses OpenSSL's default suites, all AEAD).
#define HEARTH_TLS12_CIPHERS \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:" \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:" \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

/// A new endpoint. `server_name` (clients only, may be NULL): sent as SNI unless it is an IP literal, and the
/// certificate must match it (DNS name or IP address) when the context verifies. NULL with a message on failure.
hearth_tls *hearth_tls_new(hearth_tls_ctx *ctx, const char *server_name, char *err, size_t err_len);
void hearth_tls_free(hearth_tls *tls);

/// Results of the calls below.
enum {
    HEARTH_TLS_OK = 0,
    /// More input from the peer is needed (handshake not finished, or no whole record buffered).
    HEARTH_TLS_WANT_INPUT = 1,
    /// The peer sent close_notify: no more plaintext will come.
    HEARTH_TLS_CLOSED = 2,
    /// A fatal error; `hearth_tls_error` says why. The endpoint is unusable (its alert may be in the output).
    HEARTH_TLS_ERROR = -1,
};

/// Buffers bytes received from the peer. HEARTH_TLS_OK or HEARTH_TLS_ERROR (out of memory).
int hearth_tls_feed(hearth_tls *tls, const void *bytes, size_t len);
/// Advances the handshake with the bytes fed so far: OK once it is complete, WANT_INPUT, or ERROR.
int hearth_tls_handshake(hearth_tls *tls);
/// Decrypts one record's worth of plaintext into `buf`: returns the byte count (> 0), or 0 with `*status` set
/// to WANT_INPUT, CLOSED or ERROR. Also completes the handshake first if needed.
size_t hearth_tls_read(hearth_tls *tls, void *buf, size_t cap, int *status);
/// Input bytes not yet consumed (buffered ciphertext and decrypted plaintext not yet read): 0 means another
/// `hearth_tls_read` would only report WANT_INPUT.
size_t hearth_tls_input_pending(hearth_tls *tls);
/// Encrypts all of `len` plaintext bytes into the output (handshake must be complete). OK or ERROR.
int hearth_tls_write(hearth_tls *tls, const void *bytes, size_t len);
/// Queues close_notify. OK or ERROR.
int hearth_tls_close(hearth_tls *tls);
/// Bytes waiting to be sent to the peer.
size_t hearth_tls_output_pending(hearth_tls *tls);
/// Moves up to `cap` output bytes into `buf`; returns how many.
size_t hearth_tls_take_output(hearth_tls *tls, void *buf, size_t cap);

/// Why the last call failed: OpenSSL's reason, and the certificate verification result when that failed.
const char *hearth_tls_error(hearth_tls *tls);
int hearth_tls_handshake_done(hearth_tls *tls);
/// The verified peer certificate's subject (RFC 2253, e.g. "CN=alice,O=Example"); returns its length, 0 when
/// the peer sent no certificate.
size_t hearth_tls_peer_subject(hearth_tls *tls, char *buf, size_t cap);
/// "TLSv1.3", "TLS_AES_128_GCM_SHA256", 1 when the session was resumed.
const char *hearth_tls_protocol(hearth_tls *tls);
const char *hearth_tls_cipher(hearth_tls *tls);
int hearth_tls_session_reused(hearth_tls *tls);

#endif

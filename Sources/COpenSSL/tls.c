// TLS over memory BIOs; see include/hearth_tls.h. Nothing here touches a socket: the caller moves bytes.
#include "hearth_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

struct hearth_tls_ctx {
    SSL_CTX *ssl_ctx;
    int is_server;
    atomic_int refs;
    // Client session resumption: the newest resumable session, for the server name it was made with.
    pthread_mutex_t lock;
    SSL_SESSION *session;
    char *session_name;
};

struct hearth_tls {
    SSL *ssl;
    BIO *rbio;   // bytes from the peer, read by OpenSSL
    BIO *wbio;   // bytes for the peer, written by OpenSSL
    hearth_tls_ctx *ctx;
    char *server_name;
    char error[512];
};

static int ctx_index = -1;   // SSL_CTX ex_data slot holding the hearth_tls_ctx (client resumption callback)
static pthread_once_t ctx_index_once = PTHREAD_ONCE_INIT;
static void make_ctx_index(void) { ctx_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL); }

// MARK: - Errors

/// Writes "<what>: <OpenSSL's reasons>" (the queue's entries, outermost last) into `err` and clears the queue.
static void describe_error(char *err, size_t err_len, const char *what) {
    if (!err || err_len == 0) { ERR_clear_error(); return; }
    size_t used = (size_t)snprintf(err, err_len, "%s", what);
    unsigned long code;
    const char *sep = ": ";
    char seen[8][128];
    int nseen = 0;
    while ((code = ERR_get_error()) != 0 && used < err_len) {
        char reason[128];
        const char *r = ERR_reason_error_string(code);
        if (r) snprintf(reason, sizeof reason, "%s", r);
        else snprintf(reason, sizeof reason, "error %lu", code);
        int dup = 0;
        for (int i = 0; i < nseen; i++) if (strcmp(seen[i], reason) == 0) dup = 1;
        if (dup) continue;
        if (nseen < 8) { snprintf(seen[nseen], sizeof seen[0], "%s", reason); nseen++; }
        used += (size_t)snprintf(err + used, err_len - used, "%s%s", sep, reason);
        sep = "; ";
    }
    ERR_clear_error();
}

static int readable(const char *path, const char *flag, char *err, size_t err_len) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_len, "%s %s: cannot read the file: %s", flag, path, strerror(errno));
        return 0;
    }
    fclose(f);
    return 1;
}

// MARK: - Contexts

static void ctx_release(hearth_tls_ctx *ctx) {
    if (!ctx || atomic_fetch_sub(&ctx->refs, 1) != 1) return;
    SSL_CTX_free(ctx->ssl_ctx);
    if (ctx->session) SSL_SESSION_free(ctx->session);
    free(ctx->session_name);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

/// Client: keeps the newest resumable session (TLS 1.3 sends tickets after the handshake).
static int remember_session(SSL *ssl, SSL_SESSION *session) {
    hearth_tls_ctx *ctx = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ctx_index);
    hearth_tls *tls = SSL_get_app_data(ssl);
    if (!ctx || !tls || !SSL_SESSION_is_resumable(session)) return 0;
    char *name = tls->server_name ? strdup(tls->server_name) : NULL;
    pthread_mutex_lock(&ctx->lock);
    SSL_SESSION *old = ctx->session;
    char *old_name = ctx->session_name;
    ctx->session = session;          // the reference OpenSSL handed us (return 1 keeps it)
    ctx->session_name = name;
    pthread_mutex_unlock(&ctx->lock);
    if (old) SSL_SESSION_free(old);
    free(old_name);
    return 1;
}

hearth_tls_ctx *hearth_tls_ctx_new(const hearth_tls_ctx_config *config, char *err, size_t err_len) {
    pthread_once(&ctx_index_once, make_ctx_index);
    ERR_clear_error();
    if (config->is_server && (!config->cert_file || !config->key_file)) {
        snprintf(err, err_len, "a TLS server needs a certificate (--tls-cert) and its key (--tls-key)");
        return NULL;
    }
    if ((config->cert_file == NULL) != (config->key_file == NULL)) {
        snprintf(err, err_len, "a certificate and its key go together: give both or neither");
        return NULL;
    }
    const char *cert_flag = config->is_server ? "--tls-cert" : "certificate";
    const char *key_flag = config->is_server ? "--tls-key" : "key";
    const char *ca_flag = config->is_server ? "--tls-client-ca" : "CA file";
    if (config->cert_file && !readable(config->cert_file, cert_flag, err, err_len)) return NULL;
    if (config->key_file && !readable(config->key_file, key_flag, err, err_len)) return NULL;
    if (config->ca_file && !readable(config->ca_file, ca_flag, err, err_len)) return NULL;

    SSL_CTX *c = SSL_CTX_new(config->is_server ? TLS_server_method() : TLS_client_method());
    if (!c) { describe_error(err, err_len, "cannot create a TLS context"); return NULL; }
    SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
    SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(c, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (SSL_CTX_set_cipher_list(c, HEARTH_TLS12_CIPHERS) != 1) {
        describe_error(err, err_len, "cannot set the TLS 1.2 cipher list");
        SSL_CTX_free(c);
        return NULL;
    }
    char what[1200];
    if (config->cert_file) {
        if (SSL_CTX_use_certificate_chain_file(c, config->cert_file) != 1) {
            snprintf(what, sizeof what, "%s %s: not a usable PEM certificate chain", cert_flag, config->cert_file);
            describe_error(err, err_len, what);
            SSL_CTX_free(c);
            return NULL;
        }
        if (SSL_CTX_use_PrivateKey_file(c, config->key_file, SSL_FILETYPE_PEM) != 1) {
            unsigned long last = ERR_peek_last_error();
            if (ERR_GET_LIB(last) == ERR_LIB_X509 && ERR_GET_REASON(last) == X509_R_KEY_VALUES_MISMATCH) {
                snprintf(what, sizeof what, "%s %s does not belong to the certificate in %s", key_flag,
                         config->key_file, config->cert_file);
            } else {
                snprintf(what, sizeof what, "%s %s: not a usable PEM private key", key_flag, config->key_file);
            }
            describe_error(err, err_len, what);
            SSL_CTX_free(c);
            return NULL;
        }
        if (SSL_CTX_check_private_key(c) != 1) {
            snprintf(what, sizeof what, "%s %s does not belong to the certificate in %s", key_flag, config->key_file,
                     config->cert_file);
            describe_error(err, err_len, what);
            SSL_CTX_free(c);
            return NULL;
        }
    }
    if (config->is_server) {
        static const unsigned char sid[] = "hearthd";
        SSL_CTX_set_session_id_context(c, sid, sizeof sid - 1);
        SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_SERVER);
        if (config->ca_file) {
            if (SSL_CTX_load_verify_locations(c, config->ca_file, NULL) != 1) {
                snprintf(what, sizeof what, "%s %s: not a usable PEM CA file", ca_flag, config->ca_file);
                describe_error(err, err_len, what);
                SSL_CTX_free(c);
                return NULL;
            }
            STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(config->ca_file);
            if (names) SSL_CTX_set_client_CA_list(c, names);
            SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        }
    } else {
        if (config->ca_file) {
            if (SSL_CTX_load_verify_locations(c, config->ca_file, NULL) != 1) {
                snprintf(what, sizeof what, "%s %s: not a usable PEM CA file", ca_flag, config->ca_file);
                describe_error(err, err_len, what);
                SSL_CTX_free(c);
                return NULL;
            }
        } else if (SSL_CTX_set_default_verify_paths(c) != 1) {
            describe_error(err, err_len, "cannot load the system's trusted certificates");
            SSL_CTX_free(c);
            return NULL;
        }
        SSL_CTX_set_verify(c, config->verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
        SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(c, remember_session);
    }

    hearth_tls_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) { SSL_CTX_free(c); snprintf(err, err_len, "out of memory"); return NULL; }
    ctx->ssl_ctx = c;
    ctx->is_server = config->is_server;
    atomic_init(&ctx->refs, 1);
    pthread_mutex_init(&ctx->lock, NULL);
    SSL_CTX_set_ex_data(c, ctx_index, ctx);
    return ctx;
}

void hearth_tls_ctx_free(hearth_tls_ctx *ctx) { ctx_release(ctx); }

static size_t name_text(const X509_NAME *name, char *buf, size_t cap) {
    if (cap == 0) return 0;
    buf[0] = 0;
    if (!name) return 0;
    BIO *b = BIO_new(BIO_s_mem());
    if (!b) return 0;
    X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253);
    int n = BIO_read(b, buf, (int)(cap - 1));
    BIO_free(b);
    if (n < 0) n = 0;
    buf[n] = 0;
    return (size_t)n;
}

size_t hearth_tls_ctx_subject(hearth_tls_ctx *ctx, char *buf, size_t cap) {
    X509 *cert = SSL_CTX_get0_certificate(ctx->ssl_ctx);
    return name_text(cert ? X509_get_subject_name(cert) : NULL, buf, cap);
}

size_t hearth_tls_ctx_not_after(hearth_tls_ctx *ctx, char *buf, size_t cap) {
    if (cap == 0) return 0;
    buf[0] = 0;
    X509 *cert = SSL_CTX_get0_certificate(ctx->ssl_ctx);
    if (!cert) return 0;
    BIO *b = BIO_new(BIO_s_mem());
    if (!b) return 0;
    ASN1_TIME_print(b, X509_get0_notAfter(cert));
    int n = BIO_read(b, buf, (int)(cap - 1));
    BIO_free(b);
    if (n < 0) n = 0;
    buf[n] = 0;
    return (size_t)n;
}

// MARK: - Endpoints

static int is_ip_literal(const char *name) {
    unsigned char addr[16];
    return inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1;
}

hearth_tls *hearth_tls_new(hearth_tls_ctx *ctx, const char *server_name, char *err, size_t err_len) {
    ERR_clear_error();
    hearth_tls *tls = calloc(1, sizeof *tls);
    if (!tls) { snprintf(err, err_len, "out of memory"); return NULL; }
    tls->ssl = SSL_new(ctx->ssl_ctx);
    tls->rbio = BIO_new(BIO_s_mem());
    tls->wbio = BIO_new(BIO_s_mem());
    if (!tls->ssl || !tls->rbio || !tls->wbio) {
        describe_error(err, err_len, "cannot create a TLS connection");
        if (tls->ssl) SSL_free(tls->ssl);
        BIO_free(tls->rbio);
        BIO_free(tls->wbio);
        free(tls);
        return NULL;
    }
    // An empty input BIO means "wait for more", never end of stream.
    BIO_set_mem_eof_return(tls->rbio, -1);
    SSL_set_bio(tls->ssl, tls->rbio, tls->wbio);
    SSL_set_app_data(tls->ssl, tls);
    atomic_fetch_add(&ctx->refs, 1);
    tls->ctx = ctx;
    if (ctx->is_server) {
        SSL_set_accept_state(tls->ssl);
        return tls;
    }
    SSL_set_connect_state(tls->ssl);
    if (server_name && server_name[0]) {
        tls->server_name = strdup(server_name);
        int ok = 1;
        if (is_ip_literal(server_name)) {
            ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(tls->ssl), server_name);
        } else {
            ok = SSL_set_tlsext_host_name(tls->ssl, server_name) == 1 && SSL_set1_host(tls->ssl, server_name) == 1;
        }
        if (!ok) {
            char what[400];
            snprintf(what, sizeof what, "cannot use '%s' as the server's name", server_name);
            describe_error(err, err_len, what);
            hearth_tls_free(tls);
            return NULL;
        }
        pthread_mutex_lock(&ctx->lock);
        if (ctx->session && ctx->session_name && strcmp(ctx->session_name, server_name) == 0) {
            SSL_set_session(tls->ssl, ctx->session);   // takes its own reference
        }
        pthread_mutex_unlock(&ctx->lock);
    }
    return tls;
}

void hearth_tls_free(hearth_tls *tls) {
    if (!tls) return;
    SSL_free(tls->ssl);   // frees both BIOs
    ctx_release(tls->ctx);
    free(tls->server_name);
    free(tls);
}

/// SSL_get_error needs an empty error queue before each call; failures drain it, so this is nearly free.
static inline void clear_stale_errors(void) {
    if (ERR_peek_error() != 0) ERR_clear_error();
}

/// Records why `ret` (an SSL call's result) failed; returns the HEARTH_TLS_* status it means.
static int status_of(hearth_tls *tls, int ret, const char *what) {
    int e = SSL_get_error(tls->ssl, ret);
    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        clear_stale_errors();
        return HEARTH_TLS_WANT_INPUT;
    case SSL_ERROR_ZERO_RETURN:
        clear_stale_errors();
        return HEARTH_TLS_CLOSED;
    default:
        break;
    }
    long verify = SSL_get_verify_result(tls->ssl);
    if (verify != X509_V_OK && !SSL_is_init_finished(tls->ssl)) {
        char prefix[400];
        snprintf(prefix, sizeof prefix, "%s: certificate verify failed: %s", what, X509_verify_cert_error_string(verify));
        ERR_clear_error();
        snprintf(tls->error, sizeof tls->error, "%s", prefix);
        return HEARTH_TLS_ERROR;
    }
    if (ERR_peek_error() == 0) {
        snprintf(tls->error, sizeof tls->error, "%s: the peer closed the connection abruptly", what);
        return HEARTH_TLS_ERROR;
    }
    describe_error(tls->error, sizeof tls->error, what);
    return HEARTH_TLS_ERROR;
}

int hearth_tls_feed(hearth_tls *tls, const void *bytes, size_t len) {
    while (len > 0) {
        int chunk = len > (1u << 30) ? (1 << 30) : (int)len;
        int n = BIO_write(tls->rbio, bytes, chunk);
        if (n <= 0) {
            snprintf(tls->error, sizeof tls->error, "out of memory buffering TLS input");
            return HEARTH_TLS_ERROR;
        }
        bytes = (const char *)bytes + n;
        len -= (size_t)n;
    }
    return HEARTH_TLS_OK;
}

int hearth_tls_handshake(hearth_tls *tls) {
    if (SSL_is_init_finished(tls->ssl)) return HEARTH_TLS_OK;
    clear_stale_errors();
    int r = SSL_do_handshake(tls->ssl);
    if (r == 1) return HEARTH_TLS_OK;
    return status_of(tls, r, "TLS handshake failed");
}

size_t hearth_tls_read(hearth_tls *tls, void *buf, size_t cap, int *status) {
    clear_stale_errors();
    size_t n = 0;
    int r = SSL_read_ex(tls->ssl, buf, cap, &n);
    if (r == 1) { *status = HEARTH_TLS_OK; return n; }
    *status = status_of(tls, r, SSL_is_init_finished(tls->ssl) ? "TLS read failed" : "TLS handshake failed");
    return 0;
}

int hearth_tls_write(hearth_tls *tls, const void *bytes, size_t len) {
    if (len == 0) return HEARTH_TLS_OK;
    clear_stale_errors();
    size_t written = 0;
    int r = SSL_write_ex(tls->ssl, bytes, len, &written);
    if (r == 1 && written == len) return HEARTH_TLS_OK;
    int s = status_of(tls, r, "TLS write failed");
    if (s != HEARTH_TLS_ERROR) snprintf(tls->error, sizeof tls->error, "TLS write failed: the handshake is not complete");
    return HEARTH_TLS_ERROR;
}

int hearth_tls_close(hearth_tls *tls) {
    ERR_clear_error();
    if (!SSL_is_init_finished(tls->ssl)) return HEARTH_TLS_OK;
    int r = SSL_shutdown(tls->ssl);
    if (r >= 0) return HEARTH_TLS_OK;
    return status_of(tls, r, "TLS close failed") == HEARTH_TLS_ERROR ? HEARTH_TLS_ERROR : HEARTH_TLS_OK;
}

size_t hearth_tls_output_pending(hearth_tls *tls) { return BIO_ctrl_pending(tls->wbio); }

size_t hearth_tls_input_pending(hearth_tls *tls) {
    return BIO_ctrl_pending(tls->rbio) + (size_t)SSL_pending(tls->ssl);
}

size_t hearth_tls_take_output(hearth_tls *tls, void *buf, size_t cap) {
    size_t n = 0;
    if (cap == 0 || BIO_read_ex(tls->wbio, buf, cap, &n) != 1) return 0;
    return n;
}

const char *hearth_tls_error(hearth_tls *tls) { return tls->error; }

int hearth_tls_handshake_done(hearth_tls *tls) { return SSL_is_init_finished(tls->ssl); }

size_t hearth_tls_peer_subject(hearth_tls *tls, char *buf, size_t cap) {
    X509 *cert = SSL_get0_peer_certificate(tls->ssl);
    return name_text(cert ? X509_get_subject_name(cert) : NULL, buf, cap);
}

const char *hearth_tls_protocol(hearth_tls *tls) { return SSL_get_version(tls->ssl); }

const char *hearth_tls_cipher(hearth_tls *tls) { return SSL_get_cipher_name(tls->ssl); }

int hearth_tls_session_reused(hearth_tls *tls) { return SSL_session_reused(tls->ssl); }

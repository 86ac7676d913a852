// The C side of Hearth's one OpenSSL importer (the Swift target HearthCrypto is the only module that imports
// this). Each file here wraps one job in a narrow API, so that OpenSSL's macros and ownership rules stay in C:
//   version.c  the library's version string (start-up log)
// Debian: libssl-dev (OpenSSL 3).
#ifndef HEARTH_OPENSSL_H
#define HEARTH_OPENSSL_H

/// OpenSSL's version text, e.g. "OpenSSL 3.0.19 27 Jan 2026".
const char *hearth_openssl_version(void);

#endif

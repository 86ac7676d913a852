#include "hearth_openssl.h"
#include <openssl/crypto.h>

const char *hearth_openssl_version(void) {
    return OpenSSL_version(OPENSSL_VERSION);
}

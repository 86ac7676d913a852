#ifndef HEARTH_CXXHASH_SHIM_H
#define HEARTH_CXXHASH_SHIM_H
/* xxHash (Debian libxxhash-dev), for XXH3-64: the checksums of stored rows (HearthStorageSQLite only). */
#include <xxhash.h>
#endif

#ifndef HEARTH_CZLIB_SHIM_H
#define HEARTH_CZLIB_SHIM_H
/* zlib, for its CRC-32 (crc32_z): the checksums of stored rows (HearthStorageSQLite). */
#include <zlib.h>
#endif

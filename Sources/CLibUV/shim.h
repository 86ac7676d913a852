#ifndef HEARTH_CLIBUV_SHIM_H
#define HEARTH_CLIBUV_SHIM_H
#include <uv.h>
#endif

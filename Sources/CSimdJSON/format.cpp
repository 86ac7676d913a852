// Shortest round-trip formatting of doubles (C++17 std::to_chars, Ryu-based in libstdc++).
#include "csimdjson.h"

#include <charconv>
#include <cmath>

extern "C" size_t hearth_format_double(double value, char *out) {
    if (!std::isfinite(value)) return 0;
    std::to_chars_result r = std::to_chars(out, out + 30, value);
    size_t n = static_cast<size_t>(r.ptr - out);
    for (size_t i = 0; i < n; i++) {
        if (out[i] == '.' || out[i] == 'e') return n;
    }
    out[n] = '.';
    out[n + 1] = '0';
    return n + 2;
}

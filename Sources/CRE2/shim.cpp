#include "cre2.h"

#include <re2/re2.h>
#include <cstdlib>
#include <cstring>
#include <string>

struct hearth_re2 {
    RE2 re;
    explicit hearth_re2(re2::StringPiece pattern, const RE2::Options &options) : re(pattern, options) {}
};

static void copy_error(const std::string &message, char *error, size_t capacity) {
    if (error == nullptr || capacity == 0) return;
    size_t n = message.size() < capacity - 1 ? message.size() : capacity - 1;
    std::memcpy(error, message.data(), n);
    error[n] = 0;
}

// True when `pattern` uses \C (any single byte), which lets a match end inside a UTF-8 character.
static bool uses_any_byte(const char *pattern, size_t len) {
    for (size_t i = 0; i + 1 < len; i++) {
        if (pattern[i] != '\\') continue;
        if (pattern[i + 1] == 'C') return true;
        i++;   // the escaped character
    }
    return false;
}

// No C++ exception crosses into Swift: an allocation failure is an error like any other.
extern "C" hearth_re2 *hearth_re2_new(const char *pattern, size_t len, char *error, size_t error_capacity) {
    try {
        if (uses_any_byte(pattern, len)) {
            copy_error("\\C (any byte) is not supported: it can split a character", error, error_capacity);
            return nullptr;
        }
        RE2::Options options;
        options.set_log_errors(false);
        auto *re = new hearth_re2(re2::StringPiece(pattern, len), options);
        if (!re->re.ok()) {
            copy_error(re->re.error(), error, error_capacity);
            delete re;
            return nullptr;
        }
        return re;
    } catch (...) {
        copy_error("out of memory compiling the pattern", error, error_capacity);
        return nullptr;
    }
}

extern "C" void hearth_re2_free(hearth_re2 *re) { delete re; }

extern "C" int hearth_re2_full_match(const hearth_re2 *re, const char *text, size_t len) {
    try {
        return RE2::FullMatch(re2::StringPiece(text, len), re->re) ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

extern "C" int hearth_re2_find(const hearth_re2 *re, const char *text, size_t len, size_t from, size_t *start, size_t *end) {
    try {
        re2::StringPiece match;
        if (from > len || !re->re.Match(re2::StringPiece(text, len), from, len, RE2::UNANCHORED, &match, 1)) return 0;
        *start = static_cast<size_t>(match.data() - text);
        *end = *start + match.size();
        return 1;
    } catch (...) {
        return 0;
    }
}

extern "C" char *hearth_re2_replace_all(const hearth_re2 *re, const char *text, size_t len, const char *rewrite,
                                        size_t rewrite_len, size_t *out_len, char *error, size_t error_capacity) {
    try {
        re2::StringPiece rw(rewrite, rewrite_len);
        std::string why;
        if (!re->re.CheckRewriteString(rw, &why)) {
            copy_error(why, error, error_capacity);
            return nullptr;
        }
        std::string s(text, len);
        RE2::GlobalReplace(&s, re->re, rw);
        char *out = static_cast<char *>(std::malloc(s.size() + 1));
        if (out == nullptr) {
            copy_error("out of memory", error, error_capacity);
            return nullptr;
        }
        std::memcpy(out, s.data(), s.size());
        out[s.size()] = 0;
        *out_len = s.size();
        return out;
    } catch (...) {
        copy_error("out of memory replacing", error, error_capacity);
        return nullptr;
    }
}

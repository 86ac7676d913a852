#ifndef HEARTH_CRE2_H
#define HEARTH_CRE2_H
// RE2 (Debian: libre2-dev) for the rules' string.matches, split and replace: linear-time matching, the
// syntax Firestore's rules use. C functions over RE2's C++ API (shim.cpp); only HearthRules imports them.
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hearth_re2 hearth_re2;

/// Compiles `pattern` (UTF-8, `len` bytes). NULL when it is not valid RE2 syntax, with RE2's reason written
/// (truncated, NUL-terminated) into `error` of `error_capacity` bytes.
hearth_re2 *hearth_re2_new(const char *pattern, size_t len, char *error, size_t error_capacity);
void hearth_re2_free(hearth_re2 *re);

/// 1 when the whole of `text` matches.
int hearth_re2_full_match(const hearth_re2 *re, const char *text, size_t len);

/// The first match at or after byte `from`: 1 with its byte range [*start, *end), 0 when there is none.
int hearth_re2_find(const hearth_re2 *re, const char *text, size_t len, size_t from, size_t *start, size_t *end);

/// `text` with every match replaced by `rewrite` (\0 to \9 name groups, \\ is a backslash), in a buffer the
/// caller frees with free(); its length in *out_len. NULL when `rewrite` is not valid for the pattern (a
/// group it does not have, a backslash before anything else), with the reason in `error`.
char *hearth_re2_replace_all(const hearth_re2 *re, const char *text, size_t len, const char *rewrite, size_t rewrite_len,
                             size_t *out_len, char *error, size_t error_capacity);

#ifdef __cplusplus
}
#endif
#endif

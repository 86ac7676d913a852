#include "duplicate_keys.hpp"

#include <algorithm>
#include <cstring>

namespace hearth {

namespace {

inline uint8_t type_of(uint64_t word) { return static_cast<uint8_t>(word >> 56); }

inline bool is_container(uint64_t word) { return type_of(word) == '{' || type_of(word) == '['; }

// The tape index just past the value at `i` (past all of a container's contents).
inline __attribute__((always_inline)) size_t after(const uint64_t *tape, size_t i) {
    uint64_t word = tape[i];
    switch (type_of(word)) {
    case '{': case '[': return static_cast<size_t>(word & 0xFFFFFFFFu);
    case 'l': case 'u': case 'd': return i + 2;
    default: return i + 1;
    }
}

// Length and first and last byte: constant time, and enough to tell apart the keys of a typical small
// object, so that bytes are compared only for keys that are (almost always) equal.
inline uint64_t fingerprint(const uint8_t *bytes, uint32_t length) {
    if (length == 0) return 0;
    return uint64_t(length) | uint64_t(bytes[0]) << 32 | uint64_t(bytes[length - 1]) << 40;
}

// FNV-1a over every byte, for sorting the keys of large objects (whose keys often share length and ends).
uint64_t full_hash(const uint8_t *bytes, uint32_t length) {
    uint64_t h = 0xcbf29ce484222325u;
    for (uint32_t i = 0; i < length; i++) h = (h ^ bytes[i]) * 0x100000001b3u;
    return (h ^ length) * 0x100000001b3u;
}

inline bool same(const uint8_t *a, uint32_t a_length, const uint8_t *b, uint32_t b_length) {
    return a_length == b_length && std::memcmp(a, b, a_length) == 0;
}

// Objects with at most this many keys are checked pairwise; larger ones are sorted by hash.
constexpr size_t pairwise_limit = 16;

// Scratch entries kept between documents.
constexpr size_t retained_keys = 4096;

} // namespace

size_t DuplicateKeyFinder::find(const uint64_t *tape, const uint8_t *strings) {
    tape_ = tape;
    strings_ = strings;
    size_t repeated = value(1);
    // One huge object should not pin its scratch buffer.
    if (keys_.capacity() > retained_keys) std::vector<Key>().swap(keys_);
    return repeated;
}

size_t DuplicateKeyFinder::value(size_t index) {
    switch (type_of(tape_[index])) {
    case '{': return object(index);
    case '[': return array(index);
    default: return 0;
    }
}

size_t DuplicateKeyFinder::object(size_t open) {
    size_t close = after(tape_, open) - 1;
    bool nested = false;
    if (size_t repeated = check_keys(open, close, nested)) return repeated;
    if (!nested) return 0;
    for (size_t p = open + 1; p < close; p = after(tape_, p + 1)) {
        if (is_container(tape_[p + 1])) {
            if (size_t repeated = value(p + 1)) return repeated;
        }
    }
    return 0;
}

size_t DuplicateKeyFinder::array(size_t open) {
    size_t close = after(tape_, open) - 1;
    for (size_t p = open + 1; p < close; p = after(tape_, p)) {
        if (is_container(tape_[p])) {
            if (size_t repeated = value(p)) return repeated;
        }
    }
    return 0;
}

// The keys of the object whose '{' is at `open` and '}' at `close`; sets `nested` when a value is an object
// or an array.
size_t DuplicateKeyFinder::check_keys(size_t open, size_t close, bool &nested) {
    if (close - open < 4) {   // fewer than two members
        nested = close > open + 1 && is_container(tape_[open + 2]);
        return 0;
    }
    // Small objects: keys in a local array, compared pairwise by fingerprint.
    Key small[pairwise_limit];
    size_t n = 0;
    size_t p = open + 1;
    for (; p < close && n < pairwise_limit; p = after(tape_, p + 1), n++) {
        nested |= is_container(tape_[p + 1]);
        const uint8_t *s = strings_ + (tape_[p] & 0x00FFFFFFFFFFFFFFu);
        Key &k = small[n];
        std::memcpy(&k.length, s, sizeof k.length);   // little-endian, as simdjson writes it
        k.bytes = s + 4;
        k.fingerprint = fingerprint(k.bytes, k.length);
        k.tape_index = static_cast<uint32_t>(p);
    }
    if (p >= close) {
        for (size_t j = 1; j < n; j++) {
            const Key &b = small[j];
            for (size_t i = 0; i < j; i++) {
                const Key &a = small[i];
                if (a.fingerprint == b.fingerprint && same(a.bytes, a.length, b.bytes, b.length)) return b.tape_index;
            }
        }
        return 0;
    }
    // Large objects: every key, sorted by a hash of all its bytes.
    keys_.assign(small, small + n);
    for (; p < close; p = after(tape_, p + 1)) {
        nested |= is_container(tape_[p + 1]);
        const uint8_t *s = strings_ + (tape_[p] & 0x00FFFFFFFFFFFFFFu);
        uint32_t length;
        std::memcpy(&length, s, sizeof length);
        keys_.push_back(Key{0, s + 4, length, static_cast<uint32_t>(p)});
    }
    for (Key &k : keys_) k.fingerprint = full_hash(k.bytes, k.length);
    std::sort(keys_.begin(), keys_.end(), [](const Key &a, const Key &b) {
        return a.fingerprint != b.fingerprint ? a.fingerprint < b.fingerprint : a.tape_index < b.tape_index;
    });
    // Equal keys share a hash, so they sit in one run of equal hashes, in document order; a run of more
    // than one is almost always one key repeated. Report the earliest repetition in document order.
    size_t n_all = keys_.size();
    size_t first = 0;
    for (size_t start = 0; start < n_all;) {
        size_t stop = start + 1;
        while (stop < n_all && keys_[stop].fingerprint == keys_[start].fingerprint) stop++;
        for (size_t j = start + 1; j < stop; j++) {
            for (size_t i = start; i < j; i++) {
                if (same(keys_[i].bytes, keys_[i].length, keys_[j].bytes, keys_[j].length)) {
                    if (first == 0 || keys_[j].tape_index < first) first = keys_[j].tape_index;
                    break;
                }
            }
        }
        start = stop;
    }
    return first;
}

} // namespace hearth

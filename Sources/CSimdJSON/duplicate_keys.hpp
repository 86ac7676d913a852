// Finds keys that repeat within one object of a parsed document, walking simdjson's DOM tape once.
#ifndef HEARTH_DUPLICATE_KEYS_HPP
#define HEARTH_DUPLICATE_KEYS_HPP

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hearth {

/// Checks every object of a document for repeated keys (compared by their unescaped bytes, so "a" and
/// "\u0061" are the same key). Each tape word is visited about once; small objects compare their keys
/// pairwise by a cheap fingerprint, large ones sort them by hash. Keeps its scratch buffer between documents.
class DuplicateKeyFinder {
public:
    /// The tape index of the first key that repeats an earlier key of its object, or 0 when every object's
    /// keys are unique. An object's keys are checked before the objects inside it; within an object, the
    /// first repetition in document order is reported.
    size_t find(const uint64_t *tape, const uint8_t *strings);

private:
    struct Key {
        uint64_t fingerprint;   // equal keys have equal fingerprints
        const uint8_t *bytes;
        uint32_t length;
        uint32_t tape_index;
    };

    size_t object(size_t open);
    size_t array(size_t open);
    size_t value(size_t index);
    size_t check_keys(size_t open, size_t close, bool &nested);

    const uint64_t *tape_ = nullptr;
    const uint8_t *strings_ = nullptr;
    std::vector<Key> keys_;
};

} // namespace hearth

#endif

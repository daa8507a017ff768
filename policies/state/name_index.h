// FlatNameIndex: node name -> position in a snapshot's node list, for the request path.
//
// kube-scheduler sends up to every node name in every request, so this lookup runs thousands of
// times per request, and on a server the table is rarely still in the CPU caches: each read
// is a trip to memory. So a lookup mostly reads one cache line (FindAll fetches the next one
// too): an open-addressing table of 64-byte slots (at most 5/8 full) holding the hash tag, the
// position and the name itself when it has up to kInlineName bytes (cloud providers' node names
// do); longer names are compared in an arena. It never touches a NodeState.
//
// Thread safety: immutable after construction.
#ifndef GPUTOPO_POLICIES_STATE_NAME_INDEX_H_
#define GPUTOPO_POLICIES_STATE_NAME_INDEX_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gputopo::policies {

// a == b for node names, which are mostly 8 to 64 bytes: compared as 8-byte words (the last one
// overlapping) instead of through a call to memcmp, as thousands are compared per request.
inline bool SameName(std::string_view a, std::string_view b) {
  const size_t size = a.size();
  if (size != b.size()) return false;
  if (size < 8 || size > 64) return a == b;
  uint64_t x;
  uint64_t y;
  uint64_t diff = 0;
  for (size_t i = 0; i + 8 < size; i += 8) {
    std::memcpy(&x, a.data() + i, sizeof(x));
    std::memcpy(&y, b.data() + i, sizeof(y));
    diff |= x ^ y;
  }
  std::memcpy(&x, a.data() + size - 8, sizeof(x));
  std::memcpy(&y, b.data() + size - 8, sizeof(y));
  return (diff | (x ^ y)) == 0;
}

class FlatNameIndex {
 public:
  static constexpr size_t kNotFound = static_cast<size_t>(-1);
  // Names up to this many bytes are kept in the table's slots; longer ones in an arena.
  static constexpr size_t kInlineName = 52;

  // names[i] is the name at position i; names must be distinct.
  explicit FlatNameIndex(const std::vector<std::string_view>& names);

  size_t Find(std::string_view name) const {
    return slots_.empty() ? kNotFound : FindHashed(name, Hash(name));
  }
  // out[i] = Find(names[i]), for many names at once: the slot reads of several names are
  // issued together, so that their cache misses overlap.
  void FindAll(const std::vector<std::string_view>& names, std::vector<size_t>& out) const;
  std::string_view NameAt(size_t position) const {
    return std::string_view(arena_).substr(offsets_[position],
                                           offsets_[position + 1] - offsets_[position]);
  }
  size_t size() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }

 private:
  // One cache line.
  struct alignas(64) Slot {
    uint32_t tag = 0;
    uint32_t position_plus_one = 0;  // 0: empty
    uint32_t length = 0;
    // The name when length <= kInlineName; else its offset in arena_ (first 4 bytes).
    char name[kInlineName] = {};
  };
  static_assert(sizeof(Slot) == 64);
  std::string_view NameIn(const Slot& slot) const {
    if (slot.length <= kInlineName) return std::string_view(slot.name, slot.length);
    uint32_t offset;
    std::memcpy(&offset, slot.name, sizeof(offset));
    return std::string_view(arena_.data() + offset, slot.length);
  }
  size_t FindHashed(std::string_view name, uint64_t hash) const {
    const auto tag = static_cast<uint32_t>(hash >> 32);
    for (uint64_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.position_plus_one == 0) return kNotFound;
      if (slot.tag == tag && slot.length == name.size() && SameName(NameIn(slot), name)) {
        return slot.position_plus_one - 1;
      }
    }
  }
  // A fast 64-bit hash of a short string: eight bytes per multiply, then a final mix so that
  // names differing only in their last characters spread over the whole table.
  static uint64_t Hash(std::string_view name) {
    constexpr uint64_t kMul1 = 0xbf58476d1ce4e5b9ULL;
    constexpr uint64_t kMul2 = 0x94d049bb133111ebULL;
    const char* data = name.data();
    const size_t size = name.size();
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (size * kMul2);
    uint64_t word = 0;
    if (size < 8) {
      for (size_t i = 0; i < size; ++i)
        word |= uint64_t{static_cast<unsigned char>(data[i])} << (8 * i);
      h = (h ^ word) * kMul1;
    } else {
      for (size_t i = 0; i + 8 < size; i += 8) {
        std::memcpy(&word, data + i, sizeof(word));
        h = ((h ^ word) * kMul1);
        h ^= h >> 29;
      }
      std::memcpy(&word, data + size - 8, sizeof(word));  // the last 8 bytes, overlapping
      h = (h ^ word) * kMul1;
    }
    h ^= h >> 32;
    h *= kMul2;
    h ^= h >> 29;
    return h;
  }
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  std::string arena_;              // the names, back to back
  std::vector<uint32_t> offsets_;  // name i is arena_[offsets_[i], offsets_[i + 1])
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_STATE_NAME_INDEX_H_

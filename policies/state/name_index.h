// FlatNameIndex: node name -> position in a snapshot's node list, for the request path.
//
// kube-scheduler sends up to every node name in every request, so this lookup runs thousands of
// times per request: an open-addressing table of (hash tag, position) pairs in one contiguous
// array, two slots per node, compared against the node's own name on a tag match.
//
// Thread safety: immutable after construction.
#ifndef GPUTOPO_POLICIES_STATE_NAME_INDEX_H_
#define GPUTOPO_POLICIES_STATE_NAME_INDEX_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace gputopo::policies {

class FlatNameIndex {
 public:
  static constexpr size_t kNotFound = static_cast<size_t>(-1);

  // names[i] is the name at position i; names must be distinct.
  explicit FlatNameIndex(const std::vector<std::string_view>& names);

  // `name_at(i)` returns the name at position i.
  template <typename NameAt>
  size_t Find(std::string_view name, NameAt&& name_at) const {
    if (slots_.empty()) return kNotFound;
    const uint64_t hash = std::hash<std::string_view>{}(name);
    const auto tag = static_cast<uint32_t>(hash >> 32);
    for (uint64_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.position_plus_one == 0) return kNotFound;
      if (slot.tag == tag && name_at(slot.position_plus_one - 1) == name) {
        return slot.position_plus_one - 1;
      }
    }
  }

 private:
  struct Slot {
    uint32_t tag = 0;
    uint32_t position_plus_one = 0;  // 0: empty
  };
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_STATE_NAME_INDEX_H_

#include "policies/state/name_index.h"

namespace gputopo::policies {

FlatNameIndex::FlatNameIndex(const std::vector<std::string_view>& names) {
  if (names.empty()) return;
  size_t capacity = 16;
  while (capacity < names.size() * 2) capacity *= 2;
  slots_.resize(capacity);
  mask_ = capacity - 1;
  for (size_t position = 0; position < names.size(); ++position) {
    const uint64_t hash = std::hash<std::string_view>{}(names[position]);
    uint64_t i = hash & mask_;
    while (slots_[i].position_plus_one != 0) i = (i + 1) & mask_;
    slots_[i] = {static_cast<uint32_t>(hash >> 32), static_cast<uint32_t>(position + 1)};
  }
}

}  // namespace gputopo::policies

#include "policies/state/name_index.h"

#include <algorithm>

namespace gputopo::policies {

FlatNameIndex::FlatNameIndex(const std::vector<std::string_view>& names) {
  if (names.empty()) return;
  offsets_.reserve(names.size() + 1);
  offsets_.push_back(0);
  for (std::string_view name : names) {
    arena_.append(name);
    offsets_.push_back(static_cast<uint32_t>(arena_.size()));
  }
  size_t capacity = 16;
  while (capacity < names.size() * 2) capacity *= 2;
  slots_.resize(capacity);
  mask_ = capacity - 1;
  for (size_t position = 0; position < names.size(); ++position) {
    const uint64_t hash = Hash(names[position]);
    uint64_t i = hash & mask_;
    while (slots_[i].position_plus_one != 0) i = (i + 1) & mask_;
    slots_[i] = {static_cast<uint32_t>(hash >> 32), static_cast<uint32_t>(position + 1),
                 offsets_[position], offsets_[position + 1] - offsets_[position]};
  }
}

void FlatNameIndex::FindAll(const std::vector<std::string_view>& names,
                            std::vector<size_t>& out) const {
  out.resize(names.size());
  if (slots_.empty()) {
    std::fill(out.begin(), out.end(), kNotFound);
    return;
  }
  constexpr size_t kBatch = 16;
  uint64_t hashes[kBatch];
  for (size_t base = 0; base < names.size(); base += kBatch) {
    const size_t n = std::min(kBatch, names.size() - base);
    for (size_t j = 0; j < n; ++j) {
      hashes[j] = Hash(names[base + j]);
      __builtin_prefetch(&slots_[hashes[j] & mask_]);
    }
    for (size_t j = 0; j < n; ++j) {
      const Slot& slot = slots_[hashes[j] & mask_];
      if (slot.position_plus_one != 0) __builtin_prefetch(arena_.data() + slot.offset);
    }
    for (size_t j = 0; j < n; ++j) out[base + j] = FindHashed(names[base + j], hashes[j]);
  }
}

}  // namespace gputopo::policies

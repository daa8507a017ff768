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
  while (capacity * 5 < names.size() * 8) capacity *= 2;  // at most 5/8 full
  slots_.resize(capacity);
  mask_ = capacity - 1;
  for (size_t position = 0; position < names.size(); ++position) {
    const std::string_view name = names[position];
    const uint64_t hash = Hash(name);
    uint64_t i = hash & mask_;
    while (slots_[i].position_plus_one != 0) i = (i + 1) & mask_;
    Slot& slot = slots_[i];
    slot.tag = static_cast<uint32_t>(hash >> 32);
    slot.position_plus_one = static_cast<uint32_t>(position + 1);
    slot.length = static_cast<uint32_t>(name.size());
    if (name.size() <= kInlineName) {
      std::memcpy(slot.name, name.data(), name.size());
    } else {
      const uint32_t offset = offsets_[position];
      std::memcpy(slot.name, &offset, sizeof(offset));
    }
  }
}

void FlatNameIndex::FindAll(const std::vector<std::string_view>& names,
                            std::vector<size_t>& out) const {
  out.resize(names.size());
  if (slots_.empty()) {
    std::fill(out.begin(), out.end(), kNotFound);
    return;
  }
  // Hash a batch and fetch its slots together, so that their trips to memory overlap.
  constexpr size_t kBatch = 16;
  uint64_t hashes[kBatch];
  for (size_t base = 0; base < names.size(); base += kBatch) {
    const size_t n = std::min(kBatch, names.size() - base);
    for (size_t j = 0; j < n; ++j) {
      hashes[j] = Hash(names[base + j]);
      __builtin_prefetch(&slots_[hashes[j] & mask_]);
    }
    for (size_t j = 0; j < n; ++j) out[base + j] = FindHashed(names[base + j], hashes[j]);
  }
}

}  // namespace gputopo::policies

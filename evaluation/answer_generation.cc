#include "evaluation/answer_generation.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace gputopo::evaluation {

size_t AnswerGeneration::Home(const Key& key) const {
  // Every bit of the key reaches the low bits the mask keeps (MurmurHash3's finalizer).
  uint64_t h = key.version * 0x9E3779B97F4A7C15ULL;
  h ^= (key.shape_id + 0x7F4A7C15ULL) * 0xC2B2AE3D27D4EB4FULL;
  h ^= key.group_gpus * 0x165667B19E3779F9ULL;
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 33;
  return static_cast<size_t>(h) & (slots_.size() - 1);
}

size_t AnswerGeneration::SlotOf(const Key& key) const {
  const size_t mask = slots_.size() - 1;
  size_t i = Home(key);
  // Terminates: at most half of the slots are ever taken.
  while (slots_[i].answer != nullptr && !(slots_[i].key == key)) i = (i + 1) & mask;
  return i;
}

std::shared_ptr<const policies::NodeEvaluation> AnswerGeneration::Find(const Key& key) const {
  if (size_ == 0) return nullptr;
  return slots_[SlotOf(key)].answer;
}

void AnswerGeneration::Put(const Key& key, std::shared_ptr<const policies::NodeEvaluation> answer) {
  if (answer == nullptr) return;  // a null answer would mark its slot free
  if (slots_.empty()) slots_.resize(ArraySize(limit_));
  Slot& slot = slots_[SlotOf(key)];
  if (slot.answer == nullptr) {
    if (full()) return;  // precondition broken: keep the bound rather than fill the array
    ++size_;
    slot.key = key;
  }
  slot.answer = std::move(answer);
}

void AnswerGeneration::ReleaseSome(size_t count) {
  for (; count > 0 && size_ > 0 && released_to_ < slots_.size(); ++released_to_) {
    if (slots_[released_to_].answer == nullptr) continue;
    slots_[released_to_].answer.reset();
    --size_;
    --count;
  }
}

void AnswerGeneration::Reserve(size_t limit) {
  limit_ = limit;
  if (slots_.size() != ArraySize(limit)) slots_ = std::vector<Slot>(ArraySize(limit));
}

void AnswerGeneration::Restart(size_t limit) {
  ReleaseSome(size_);
  limit_ = limit;
  released_to_ = 0;
  // A kept array's slots are all free now (a free slot's key is never read).
  if (slots_.size() != ArraySize(limit)) slots_ = std::vector<Slot>();
}

}  // namespace gputopo::evaluation

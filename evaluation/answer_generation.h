// AnswerGeneration: one generation of EvaluationCache's node answers, a map from (node version,
// pod shape, group GPUs) to an evaluation, as one open-addressed array of fixed capacity (linear
// probing, never more than half full). Storing an answer is one probe into that array and no
// allocation; with a std::unordered_map, each answer cost a node allocation and dependent cache
// misses, a fifth of a new pod shape's first cycle at 5000 nodes (bench/HISTORY.md).
//
// Thread safety: not thread-safe; EvaluationCache holds its lock around every call.
#ifndef GPUTOPO_EVALUATION_ANSWER_GENERATION_H_
#define GPUTOPO_EVALUATION_ANSWER_GENERATION_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "policies/engine/evaluation.h"

namespace gputopo::evaluation {

class AnswerGeneration {
 public:
  struct Key {
    uint64_t version = 0;  // the NodeState's
    uint64_t shape_id = 0;
    policies::GpuMask group_gpus = 0;
    friend bool operator==(const Key&, const Key&) = default;
  };

  // Holds at most `limit` answers. The array (twice that, rounded up to a power of two) is
  // allocated by the first Put, so an empty generation costs nothing.
  explicit AnswerGeneration(size_t limit = 0) : limit_(limit) {}
  // A generation moved from is empty (and holds nothing: limit 0).
  AnswerGeneration(AnswerGeneration&& other) noexcept
      : limit_(std::exchange(other.limit_, 0)),
        size_(std::exchange(other.size_, 0)),
        slots_(std::move(other.slots_)),
        released_to_(std::exchange(other.released_to_, 0)) {}
  AnswerGeneration& operator=(AnswerGeneration&& other) noexcept {
    limit_ = std::exchange(other.limit_, 0);
    size_ = std::exchange(other.size_, 0);
    slots_ = std::move(other.slots_);
    other.slots_.clear();
    released_to_ = std::exchange(other.released_to_, 0);
    return *this;
  }

  // The answer stored for `key`, or null.
  std::shared_ptr<const policies::NodeEvaluation> Find(const Key& key) const;
  // Asks the CPU to fetch the slot where `key`'s probe starts (no effect when the array is not
  // allocated yet), for a caller about to Put many keys.
  void Prefetch(const Key& key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Home(key)]);
  }
  // Stores `answer` for `key`, replacing an earlier one. Precondition: answer != nullptr, and
  // !full() unless `key` is stored already.
  void Put(const Key& key, std::shared_ptr<const policies::NodeEvaluation> answer);

  size_t size() const { return size_; }
  bool full() const { return size_ >= limit_; }

  // Frees up to `count` answers, for a generation that is being emptied a little at a time.
  // Once it has been called, Find and Put are not to be until Restart. Keeps the array.
  void ReleaseSome(size_t count);
  // Allocates the array now (zeroed, so every page of it is touched), when the first Put has not
  // yet, and makes the generation hold up to `limit` answers. Precondition: it holds none.
  void Reserve(size_t limit);
  bool allocated() const { return !slots_.empty(); }
  // Empties the generation (freeing the answers left, usually none) and makes it hold up to
  // `limit` answers. It keeps its array when that is the size `limit` needs: a new array of
  // 2.6 MB costs milliseconds of page faults to first touch on some machines.
  void Restart(size_t limit);

 private:
  struct Slot {
    Key key;
    std::shared_ptr<const policies::NodeEvaluation> answer;  // null: the slot is free
  };
  size_t Home(const Key& key) const;    // where `key`'s probe starts
  size_t SlotOf(const Key& key) const;  // where `key` is, or the free slot that ends its probe
  static size_t ArraySize(size_t limit) { return std::bit_ceil(std::max<size_t>(2 * limit, 2)); }

  size_t limit_;
  size_t size_ = 0;
  std::vector<Slot> slots_;  // empty until the first Put; then a power of two >= 2 * limit_
  size_t released_to_ = 0;   // ReleaseSome's cursor: no answer is left before it
};

}  // namespace gputopo::evaluation

#endif  // GPUTOPO_EVALUATION_ANSWER_GENERATION_H_

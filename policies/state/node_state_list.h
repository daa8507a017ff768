// NodeStateList: the node states of a cluster, by position, stored in copy-on-write chunks.
//
// A snapshot of 5000 nodes used to copy 5000 shared_ptrs when it was published, and release them
// when it was dropped: an atomic increment and decrement each, on control blocks spread over the
// heap, about 0.1-0.3 ms a snapshot, two or three snapshots per bound pod (bench/HISTORY.md,
// 2026-12-07). Share() copies one pointer per chunk of kChunkSize nodes instead; Set() copies the
// one chunk it changes, once per Share().
//
// Thread safety: a const list is safe to read from any thread, and a chunk never changes once a
// Share() has handed it out. A non-const list is not thread-safe.
#ifndef GPUTOPO_POLICIES_STATE_NODE_STATE_LIST_H_
#define GPUTOPO_POLICIES_STATE_NODE_STATE_LIST_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "policies/state/node_state.h"

namespace gputopo::policies {

class NodeStateList {
 public:
  static constexpr size_t kChunkSize = 64;

  NodeStateList() = default;
  NodeStateList(NodeStateList&&) = default;
  NodeStateList& operator=(NodeStateList&&) = default;
  // Copies only through Share(), which knows that the chunks are shared from then on.
  NodeStateList(const NodeStateList&) = delete;
  NodeStateList& operator=(const NodeStateList&) = delete;

  size_t size() const { return size_; }
  // Precondition: position < size().
  const std::shared_ptr<const NodeState>& operator[](size_t position) const {
    return (*chunks_[position / kChunkSize].chunk)[position % kChunkSize];
  }

  // A list with the same elements, sharing every chunk with this one.
  NodeStateList Share() {
    NodeStateList copy;
    copy.size_ = size_;
    copy.chunks_.reserve(chunks_.size());
    for (Slot& slot : chunks_) {
      slot.shared = true;
      copy.chunks_.push_back({slot.chunk, true});
    }
    return copy;
  }

  void push_back(std::shared_ptr<const NodeState> state) {
    if (size_ % kChunkSize == 0) chunks_.push_back({std::make_shared<Chunk>(), false});
    ++size_;
    Set(size_ - 1, std::move(state));
  }

  // Precondition: position < size().
  void Set(size_t position, std::shared_ptr<const NodeState> state) {
    Slot& slot = chunks_[position / kChunkSize];
    if (slot.shared) {
      slot.chunk = std::make_shared<Chunk>(*slot.chunk);
      slot.shared = false;
    }
    (*slot.chunk)[position % kChunkSize] = std::move(state);
  }

  // Calls fn(position) for each position whose element differs from `other`'s (compared as
  // pointers), in increasing order, skipping the chunks the two lists share. Precondition:
  // other.size() == size().
  template <typename Fn>
  void ForEachDifference(const NodeStateList& other, Fn&& fn) const {
    for (size_t c = 0; c < chunks_.size(); ++c) {
      const Chunk& mine = *chunks_[c].chunk;
      const Chunk& theirs = *other.chunks_[c].chunk;
      if (&mine == &theirs) continue;
      const size_t end = std::min(kChunkSize, size_ - c * kChunkSize);
      for (size_t i = 0; i < end; ++i) {
        if (mine[i] != theirs[i]) fn(c * kChunkSize + i);
      }
    }
  }

  void clear() {
    chunks_.clear();
    size_ = 0;
  }

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::shared_ptr<const NodeState>;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = const value_type&;
    const_iterator() = default;
    const_iterator(const NodeStateList* list, size_t position) : list_(list), position_(position) {}
    reference operator*() const { return (*list_)[position_]; }
    pointer operator->() const { return &(*list_)[position_]; }
    const_iterator& operator++() {
      ++position_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++position_;
      return before;
    }
    bool operator==(const const_iterator& other) const { return position_ == other.position_; }
    bool operator!=(const const_iterator& other) const { return position_ != other.position_; }

   private:
    const NodeStateList* list_ = nullptr;
    size_t position_ = 0;
  };
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

 private:
  using Chunk = std::array<std::shared_ptr<const NodeState>, kChunkSize>;
  struct Slot {
    std::shared_ptr<Chunk> chunk;
    bool shared = false;  // another list may hold chunk: copy it before a change
  };
  std::vector<Slot> chunks_;
  size_t size_ = 0;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_STATE_NODE_STATE_LIST_H_

// GroupFilter: a 256-bit Bloom filter of the spread groups with a pod on one node.
//
// The request path asks thousands of nodes per cycle whether they hold the pod's group; almost
// none do. The filter answers "certainly not" from 32 bytes kept beside each node's position in
// a snapshot, so that most nodes are never dereferenced. Four bits per group: with ten groups
// on a node, about one "maybe" in two thousand is false (and is then checked exactly; each
// costs a few trips to memory for the NodeState, so at 5000 nodes the 1% of a 128-bit filter
// with three bits was ~50 of them per cycle).
//
// Thread safety: a value type.
#ifndef GPUTOPO_POLICIES_STATE_GROUP_FILTER_H_
#define GPUTOPO_POLICIES_STATE_GROUP_FILTER_H_

#include <cstddef>
#include <cstdint>

namespace gputopo::policies {

class GroupFilter {
 public:
  // `group_hash` is std::hash<std::string_view> of the group name.
  void Add(size_t group_hash) {
    for (int k = 0; k < kBitsPerGroup; ++k) {
      const unsigned bit = BitOf(group_hash, k);
      words_[bit >> 6] |= uint64_t{1} << (bit & 63);
    }
  }
  // False: the group is certainly not in the filter.
  bool MayContain(size_t group_hash) const {
    for (int k = 0; k < kBitsPerGroup; ++k) {
      const unsigned bit = BitOf(group_hash, k);
      if ((words_[bit >> 6] & (uint64_t{1} << (bit & 63))) == 0) return false;
    }
    return true;
  }
  bool empty() const { return (words_[0] | words_[1] | words_[2] | words_[3]) == 0; }

 private:
  static constexpr int kBitsPerGroup = 4;
  // Eight bits of the hash per probe, from its high half (the low bits of std::hash are the
  // least mixed on some platforms).
  static unsigned BitOf(size_t hash, int k) {
    const auto h = static_cast<uint64_t>(hash);
    return static_cast<unsigned>((h >> (56 - 8 * k)) & 255u);
  }
  uint64_t words_[4] = {0, 0, 0, 0};
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_STATE_GROUP_FILTER_H_

// ClusterSnapshot: every node's state at one instant, read by one scheduling cycle.
//
// Thread safety: immutable; safe to share. Holding a snapshot keeps its NodeStates alive.
#ifndef GPUTOPO_POLICIES_STATE_CLUSTER_SNAPSHOT_H_
#define GPUTOPO_POLICIES_STATE_CLUSTER_SNAPSHOT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policies/state/group_filter.h"
#include "policies/state/name_index.h"
#include "policies/state/node_state.h"
#include "policies/state/node_state_list.h"

namespace gputopo::policies {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using NodeIndex = std::unordered_map<std::string, size_t, StringHash, std::equal_to<>>;

// What the request path reads about the node at one position without dereferencing it.
struct NodeSummary {
  uint64_t version = 0;  // NodeState::version(); unique across all NodeStates, increasing
  GroupFilter groups;    // NodeState::group_filter()
};

class ClusterSnapshot {
 public:
  // summaries[i] describes nodes[i]; index maps each node's name to its position. `claimed`
  // lists, in increasing order, the positions of the nodes with nominated pods' claims
  // (NodeState::nominees() not empty).
  ClusterSnapshot(uint64_t generation, NodeStateList nodes, std::vector<NodeSummary> summaries,
                  std::shared_ptr<const FlatNameIndex> index, std::vector<size_t> claimed = {})
      : generation_(generation),
        nodes_(std::move(nodes)),
        summaries_(std::move(summaries)),
        index_(std::move(index)),
        claimed_(std::move(claimed)) {}

  static constexpr size_t kNotFound = static_cast<size_t>(-1);

  // Position of the node in nodes(), or kNotFound.
  size_t FindIndex(std::string_view name) const { return index_->Find(name); }
  // out[i] = FindIndex(names[i]); faster than one at a time.
  void FindIndices(const std::vector<std::string_view>& names, std::vector<size_t>& out) const {
    index_->FindAll(names, out);
  }
  // nullptr when the node is unknown.
  const NodeState* Find(std::string_view name) const {
    const size_t i = FindIndex(name);
    return i == kNotFound ? nullptr : nodes_[i].get();
  }
  std::shared_ptr<const NodeState> FindShared(std::string_view name) const {
    const size_t i = FindIndex(name);
    return i == kNotFound ? nullptr : nodes_[i];
  }
  // Nodes in the order they were added.
  const NodeStateList& nodes() const { return nodes_; }
  size_t node_count() const { return nodes_.size(); }
  const NodeSummary& summary(size_t position) const { return summaries_[position]; }
  // Positions stay valid for as long as the index object is the same one.
  const std::shared_ptr<const FlatNameIndex>& name_index() const { return index_; }
  // Increases with every change to the cluster state.
  uint64_t generation() const { return generation_; }
  // Positions of the nodes where nominated pods hold claims, in increasing order; usually none.
  const std::vector<size_t>& claimed_positions() const { return claimed_; }

 private:
  uint64_t generation_;
  NodeStateList nodes_;
  std::vector<NodeSummary> summaries_;          // parallel to nodes_
  std::shared_ptr<const FlatNameIndex> index_;  // name -> position in nodes_
  std::vector<size_t> claimed_;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_STATE_CLUSTER_SNAPSHOT_H_

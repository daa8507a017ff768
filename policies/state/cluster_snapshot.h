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

#include "policies/state/name_index.h"
#include "policies/state/node_state.h"

namespace gputopo::policies {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using NodeIndex = std::unordered_map<std::string, size_t, StringHash, std::equal_to<>>;

class ClusterSnapshot {
 public:
  ClusterSnapshot(uint64_t generation, std::vector<std::shared_ptr<const NodeState>> nodes,
                  std::shared_ptr<const FlatNameIndex> index)
      : generation_(generation), nodes_(std::move(nodes)), index_(std::move(index)) {}

  static constexpr size_t kNotFound = static_cast<size_t>(-1);

  // Position of the node in nodes(), or kNotFound.
  size_t FindIndex(std::string_view name) const {
    return index_->Find(name, [this](size_t i) -> const std::string& { return nodes_[i]->name(); });
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
  const std::vector<std::shared_ptr<const NodeState>>& nodes() const { return nodes_; }
  size_t node_count() const { return nodes_.size(); }
  // Increases with every change to the cluster state.
  uint64_t generation() const { return generation_; }

 private:
  uint64_t generation_;
  std::vector<std::shared_ptr<const NodeState>> nodes_;
  std::shared_ptr<const FlatNameIndex> index_;  // name -> position in nodes_
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_STATE_CLUSTER_SNAPSHOT_H_

// NodeStateList: snapshots share the chunks that did not change, and a published list never
// changes afterwards.
#include "policies/state/node_state_list.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gputopo/status.h"

namespace gputopo::policies {
namespace {

std::shared_ptr<const NodeState> State(const std::string& name, uint64_t version) {
  return std::make_shared<const NodeState>(
      NodeState::Build(name, InvalidArgument("no topology in this test"), {}, version));
}

TEST(NodeStateListTest, ASharedListKeepsItsElementsWhileTheSourceChanges) {
  constexpr size_t kNodes = 3 * NodeStateList::kChunkSize + 5;  // a partial last chunk
  NodeStateList list;
  std::vector<std::shared_ptr<const NodeState>> added;
  for (size_t i = 0; i < kNodes; ++i) {
    added.push_back(State("n" + std::to_string(i), i + 1));
    list.push_back(added.back());
  }
  ASSERT_EQ(list.size(), kNodes);
  const NodeStateList first = list.Share();
  // One node in the second chunk and the last one change after the share.
  const size_t changed = NodeStateList::kChunkSize + 3;
  list.Set(changed, State("n-changed", 1000));
  list.Set(kNodes - 1, State("n-last", 1001));
  const NodeStateList second = list.Share();
  list.push_back(State("n-new", 1002));  // grows the last chunk after the second share

  ASSERT_EQ(first.size(), kNodes);
  ASSERT_EQ(second.size(), kNodes);
  ASSERT_EQ(list.size(), kNodes + 1);
  for (size_t i = 0; i < kNodes; ++i) {
    ASSERT_EQ(first[i], added[i]) << i;  // the same objects, untouched by the Sets
    if (i != changed && i != kNodes - 1) {
      ASSERT_EQ(second[i], added[i]) << i;
    }
  }
  EXPECT_EQ(second[changed]->name(), "n-changed");
  EXPECT_EQ(second[kNodes - 1]->name(), "n-last");
  EXPECT_EQ(list[kNodes]->name(), "n-new");

  std::vector<size_t> differences;
  second.ForEachDifference(first, [&](size_t position) { differences.push_back(position); });
  EXPECT_EQ(differences, (std::vector<size_t>{changed, kNodes - 1}));
  differences.clear();
  second.ForEachDifference(second, [&](size_t position) { differences.push_back(position); });
  EXPECT_TRUE(differences.empty());

  size_t iterated = 0;
  for (const std::shared_ptr<const NodeState>& state : second) {
    EXPECT_EQ(state, second[iterated]);
    ++iterated;
  }
  EXPECT_EQ(iterated, kNodes);
}

// A share holds each chunk once, not each node: a node in a chunk that no Set touched is held by
// one chunk for both lists, and one in a changed chunk by the two versions of that chunk.
TEST(NodeStateListTest, ListsShareTheChunksThatDidNotChange) {
  NodeStateList list;
  for (size_t i = 0; i < 2 * NodeStateList::kChunkSize; ++i) list.push_back(State("n", i + 1));
  const NodeStateList shared = list.Share();
  list.Set(0, State("a", 500));
  list.Set(1, State("b", 501));
  EXPECT_EQ(shared[2].use_count(), 2);  // chunk 0: the share's, and the list's copy
  EXPECT_EQ(shared[NodeStateList::kChunkSize].use_count(), 1);  // chunk 1: one, held by both
  EXPECT_EQ(shared[0]->name(), "n");
  EXPECT_EQ(list[0]->name(), "a");
  EXPECT_EQ(list[1]->name(), "b");
}

}  // namespace
}  // namespace gputopo::policies

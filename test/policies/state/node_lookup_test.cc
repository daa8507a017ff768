// The request path's per-node lookups: node names to positions, and "may this node hold the
// pod's group" from a node's group filter.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "policies/state/group_filter.h"
#include "policies/state/name_index.h"

namespace gputopo::policies {
namespace {

size_t HashOf(const std::string& s) { return std::hash<std::string_view>{}(s); }

TEST(GroupFilterTest, NeverForgetsAGroupItHolds) {
  for (int node = 0; node < 200; ++node) {
    GroupFilter filter;
    std::vector<std::string> groups;
    for (int g = 0; g < 12; ++g)
      groups.push_back("ns/Deployment/svc-" + std::to_string(node * 12 + g));
    for (const std::string& g : groups) filter.Add(HashOf(g));
    for (const std::string& g : groups) ASSERT_TRUE(filter.MayContain(HashOf(g))) << g;
  }
  EXPECT_TRUE(GroupFilter().empty());
  EXPECT_FALSE(GroupFilter().MayContain(HashOf("anything")));
}

TEST(GroupFilterTest, RarelySaysMaybeForAGroupItDoesNotHold) {
  // Ten groups on each of 100 nodes (busy time-sliced nodes): four bits each in 256 leave
  // about 0.05% false "maybe"s; allow 0.2% (a 128-bit filter with three bits gives ~1%).
  int maybe = 0;
  constexpr int kNodes = 100;
  constexpr int kProbes = 2000;
  for (int node = 0; node < kNodes; ++node) {
    GroupFilter filter;
    for (int g = 0; g < 10; ++g)
      filter.Add(HashOf("prod/Deployment/held-" + std::to_string(node * 10 + g)));
    for (int g = 0; g < kProbes; ++g)
      maybe += filter.MayContain(HashOf("prod/Deployment/other-" + std::to_string(g)));
  }
  EXPECT_LT(maybe, kNodes * kProbes * 2 / 1000);
}

// Every length the word-wise comparison treats apart (under 8, whole words, a partial last word,
// 64 and beyond), and a difference at every byte of it.
TEST(SameNameTest, EqualExactlyWhenEveryByteIsEqual) {
  for (size_t size : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100}) {
    std::string a(size, 'x');
    for (size_t i = 0; i < size; ++i) a[i] = static_cast<char>('a' + i % 26);
    const std::string b = a;  // another buffer
    EXPECT_TRUE(SameName(a, b)) << size;
    EXPECT_FALSE(SameName(a, a + "z")) << size;
    EXPECT_FALSE(SameName(a + "z", a)) << size;
    for (size_t i = 0; i < size; ++i) {
      std::string c = a;
      c[i] = static_cast<char>(c[i] ^ 0x20);
      ASSERT_FALSE(SameName(a, c)) << size << " " << i;
    }
  }
}

TEST(FlatNameIndexTest, FindsEveryNameAndNothingElseOneByOneAndInBulk) {
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back("gpu-node-" + std::to_string(i));
  names.push_back("");  // odd but distinct
  const std::vector<std::string_view> views(names.begin(), names.end());
  const FlatNameIndex index(views);
  ASSERT_EQ(index.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(index.Find(names[i]), i);
    ASSERT_EQ(index.NameAt(i), names[i]);
  }
  std::vector<std::string> asked = {"gpu-node-7", "gpu-node-1000", "gpu-node-07", "gpu-node-999",
                                    "",           "GPU-NODE-7"};
  for (int i = 0; i < 40; ++i) asked.push_back("gpu-node-" + std::to_string(i * 25));
  const std::vector<std::string_view> asked_views(asked.begin(), asked.end());
  std::vector<size_t> positions;
  index.FindAll(asked_views, positions);
  ASSERT_EQ(positions.size(), asked.size());
  for (size_t i = 0; i < asked.size(); ++i)
    EXPECT_EQ(positions[i], index.Find(asked[i])) << asked[i];
  EXPECT_EQ(positions[0], 7u);
  EXPECT_EQ(positions[1], FlatNameIndex::kNotFound);
  EXPECT_EQ(positions[2], FlatNameIndex::kNotFound);
  EXPECT_EQ(positions[5], FlatNameIndex::kNotFound);

  // Names too long to keep in a slot are compared in the arena; each length around the limit.
  std::vector<std::string> long_names;
  for (size_t length = FlatNameIndex::kInlineName - 2; length <= FlatNameIndex::kInlineName + 70;
       ++length) {
    long_names.push_back(std::string(length, 'n') + "-" + std::to_string(length));
    long_names.push_back("x" + long_names.back());
  }
  const std::vector<std::string_view> long_views(long_names.begin(), long_names.end());
  const FlatNameIndex long_index(long_views);
  for (size_t i = 0; i < long_names.size(); ++i) {
    ASSERT_EQ(long_index.Find(long_names[i]), i) << long_names[i].size();
    ASSERT_EQ(long_index.NameAt(i), long_names[i]);
    std::string other = long_names[i];
    other.back() = '#';  // same length, differs in the last byte
    ASSERT_EQ(long_index.Find(other), FlatNameIndex::kNotFound) << other.size();
  }
  long_index.FindAll(long_views, positions);
  for (size_t i = 0; i < long_names.size(); ++i) EXPECT_EQ(positions[i], i);

  const FlatNameIndex empty({});
  empty.FindAll(asked_views, positions);
  for (size_t p : positions) EXPECT_EQ(p, FlatNameIndex::kNotFound);
}

}  // namespace
}  // namespace gputopo::policies

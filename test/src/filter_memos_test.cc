// FilterMemo: the names of a filter's candidates are kept (from the request text in one copy
// when they are its raw tokens), and prioritize's candidates are found among them in order.
#include "src/service/filter_memos.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gputopo::service {
namespace {

std::vector<std::string> NamesOf(const FilterMemo& memo) {
  std::vector<std::string> out;
  for (size_t i = 0; i < memo.name_ends.size(); ++i) out.emplace_back(memo.NameAt(i));
  return out;
}

extender::ExtenderArgs Args(std::vector<std::string_view> names, std::string_view text) {
  extender::ExtenderArgs args;
  args.node_names = std::move(names);
  args.text = text;
  return args;
}

// Views of each "..." token of `text` (no escapes in it).
std::vector<std::string_view> TokensOf(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t open = text.find('"'); open != std::string_view::npos;) {
    const size_t close = text.find('"', open + 1);
    out.push_back(text.substr(open + 1, close - open - 1));
    open = text.find('"', close + 1);
  }
  return out;
}

TEST(FilterMemoTest, KeepsNamesFromTheRequestTextInOneStretch) {
  const std::string text = R"({"NodeNames":["n1","n22", "n3" ,"","n5"]})";
  const std::vector<std::string_view> tokens = TokensOf(text);
  const std::vector<std::string_view> names(tokens.begin() + 1, tokens.end());  // not the key
  ASSERT_EQ(names.size(), 5u);
  FilterMemo memo;
  memo.SetNames(Args(names, text));
  EXPECT_EQ(NamesOf(memo), (std::vector<std::string>{"n1", "n22", "n3", "", "n5"}));
  EXPECT_EQ(memo.names, R"(n1","n22", "n3" ,"","n5)");  // the stretch, separators and all
}

TEST(FilterMemoTest, CopiesNameByNameWhenTheNamesAreNotAllTokensOfTheText) {
  const std::string text = R"(["a","b","c"])";
  std::vector<std::string_view> names = TokensOf(text);
  const std::string unescaped = "b";  // as if "b" had been unescaped elsewhere
  names[1] = unescaped;
  FilterMemo memo;
  memo.SetNames(Args(names, text));
  EXPECT_EQ(NamesOf(memo), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(memo.names, "abc");

  const std::vector<std::string_view> in_order = TokensOf(text);
  memo.SetNames(Args({in_order[2], in_order[0]}, text));  // out of text order
  EXPECT_EQ(NamesOf(memo), (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(memo.names, "ca");

  memo.SetNames(Args(in_order, {}));  // no text
  EXPECT_EQ(memo.names, "abc");
  memo.SetNames(Args({}, text));
  EXPECT_TRUE(NamesOf(memo).empty());
}

TEST(FilterMemoTest, CopiesNameByNameWhenTheNamesAreFarApartInTheText) {
  // Names of full Node objects: a whole body between them is not copied.
  const std::string filler(4096, ' ');
  const std::string text = "[\"x\"," + filler + "\"y\"]";
  FilterMemo memo;
  memo.SetNames(Args(TokensOf(text), text));
  EXPECT_EQ(NamesOf(memo), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(memo.names, "xy");
}

TEST(FilterMemoTest, MatchesASubsequenceInOrderOnly) {
  const std::string text = R"(["c","a","b"])";
  FilterMemo memo;
  memo.SetNames(Args(TokensOf(text), text));
  memo.positions = {2, 0, 1};
  for (size_t i = 0; i < 3; ++i) {
    policies::EvaluationRef ref;
    ref.weighted_score = static_cast<double>(i);
    memo.per_node.push_back(ref);
  }
  std::vector<size_t> positions;
  std::vector<policies::EvaluationRef> per_node;
  ASSERT_TRUE(memo.Match({"c", "b"}, positions, per_node));
  EXPECT_EQ(positions, (std::vector<size_t>{2, 1}));
  ASSERT_EQ(per_node.size(), 2u);
  EXPECT_EQ(per_node[0].weighted_score, 0.0);
  EXPECT_EQ(per_node[1].weighted_score, 2.0);
  EXPECT_FALSE(memo.Match({"a", "c"}, positions, per_node));  // c came first
  EXPECT_FALSE(memo.Match({"d"}, positions, per_node));
  EXPECT_FALSE(memo.Match({"a", "a"}, positions, per_node));
}

}  // namespace
}  // namespace gputopo::service

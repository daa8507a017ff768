#include "evaluation/answer_generation.h"

#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

namespace gputopo::evaluation {
namespace {

using Key = AnswerGeneration::Key;

std::shared_ptr<const policies::NodeEvaluation> Answer(double score) {
  auto e = std::make_shared<policies::NodeEvaluation>();
  e->weighted_score = score;
  return e;
}

TEST(AnswerGenerationTest, EveryFieldOfTheKeyTellsAnswersApart) {
  AnswerGeneration generation(8);
  EXPECT_EQ(generation.Find({1, 2, 3}), nullptr);  // empty: nothing allocated, nothing found
  const auto a = Answer(1);
  generation.Put({1, 2, 3}, a);
  EXPECT_EQ(generation.Find({1, 2, 3}), a);
  EXPECT_EQ(generation.Find({9, 2, 3}), nullptr);
  EXPECT_EQ(generation.Find({1, 9, 3}), nullptr);
  EXPECT_EQ(generation.Find({1, 2, 9}), nullptr);
  const auto b = Answer(2);
  generation.Put({1, 2, 3}, b);  // replaces, does not add
  EXPECT_EQ(generation.Find({1, 2, 3}), b);
  EXPECT_EQ(generation.size(), 1u);
  generation.Put({1, 2, 4}, nullptr);  // ignored: a null answer would free its slot
  EXPECT_EQ(generation.size(), 1u);
}

// Keys that differ only in high bits, or in one field at a time, all land and are all found;
// the generation never holds more than its limit.
TEST(AnswerGenerationTest, HoldsUpToItsLimitOfCollidingKeysAndFindsEachOne) {
  constexpr size_t kLimit = 1000;
  AnswerGeneration generation(kLimit);
  std::vector<std::pair<Key, std::shared_ptr<const policies::NodeEvaluation>>> stored;
  for (uint64_t i = 0; stored.size() < kLimit; ++i) {
    const Key key = i % 3 == 0   ? Key{i << 40, 7, 0}
                    : i % 3 == 1 ? Key{5, i << 32, 0}
                                 : Key{5, 7, i << 20};
    stored.emplace_back(key, Answer(static_cast<double>(i)));
    generation.Put(key, stored.back().second);
  }
  EXPECT_EQ(generation.size(), kLimit);
  EXPECT_TRUE(generation.full());
  for (const auto& [key, answer] : stored) EXPECT_EQ(generation.Find(key), answer);
  generation.Put({99, 99, 99}, Answer(-1));  // full: not stored, and nothing else is lost
  EXPECT_EQ(generation.Find({99, 99, 99}), nullptr);
  EXPECT_EQ(generation.size(), kLimit);
  generation.Put(stored[0].first, Answer(-2));  // a stored key may still be replaced
  EXPECT_EQ(generation.Find(stored[0].first)->weighted_score, -2);
}

TEST(AnswerGenerationTest, AMovedFromGenerationIsEmptyAndTheAnswersMoveAlong) {
  AnswerGeneration from(4);
  const auto a = Answer(1);
  from.Put({1, 1, 1}, a);
  AnswerGeneration to = std::move(from);
  EXPECT_EQ(to.Find({1, 1, 1}), a);
  EXPECT_EQ(from.size(), 0u);  // NOLINT(bugprone-use-after-move): the contract under test
  EXPECT_EQ(from.Find({1, 1, 1}), nullptr);
  from.Put({2, 2, 2}, a);  // limit 0: holds nothing
  EXPECT_EQ(from.Find({2, 2, 2}), nullptr);
  EXPECT_EQ(a.use_count(), 2);  // a, and `to`'s slot
}

}  // namespace
}  // namespace gputopo::evaluation

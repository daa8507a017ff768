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

// A generation emptied a little at a time frees exactly `count` answers per call, front to
// back, and nothing it was not asked to.
TEST(AnswerGenerationTest, ReleaseSomeFreesAtMostCountAnswersPerCall) {
  constexpr uint64_t kAnswers = 100;
  AnswerGeneration generation(kAnswers);
  std::vector<std::weak_ptr<const policies::NodeEvaluation>> watched;
  for (uint64_t i = 0; i < kAnswers; ++i) {
    auto answer = Answer(static_cast<double>(i));
    watched.push_back(answer);
    generation.Put({i, 1, 0}, std::move(answer));  // the generation holds the only reference
  }
  auto alive = [&] {
    size_t n = 0;
    for (const auto& w : watched) n += w.expired() ? 0 : 1;
    return n;
  };
  generation.ReleaseSome(7);
  EXPECT_EQ(generation.size(), kAnswers - 7);
  EXPECT_EQ(alive(), kAnswers - 7);
  generation.ReleaseSome(0);
  EXPECT_EQ(alive(), kAnswers - 7);
  for (int i = 0; i < 100 && generation.size() > 0; ++i) generation.ReleaseSome(10);
  EXPECT_EQ(generation.size(), 0u);
  EXPECT_EQ(alive(), 0u);
  generation.ReleaseSome(10);  // nothing left: no effect
  EXPECT_EQ(generation.size(), 0u);
  // Restarted, it is an empty generation again (its array kept): nothing old is found, and it
  // holds up to its new limit.
  generation.Restart(kAnswers);
  for (uint64_t i = 0; i < kAnswers; ++i) EXPECT_EQ(generation.Find({i, 1, 0}), nullptr);
  const auto a = Answer(1);
  generation.Put({3, 1, 0}, a);
  EXPECT_EQ(generation.Find({3, 1, 0}), a);
  EXPECT_EQ(generation.size(), 1u);
}

TEST(AnswerGenerationTest, RestartFreesWhatIsLeftAndTakesTheNewLimit) {
  AnswerGeneration generation(4);
  std::weak_ptr<const policies::NodeEvaluation> watched;
  {
    auto answer = Answer(1);
    watched = answer;
    generation.Put({1, 1, 1}, std::move(answer));
  }
  generation.Restart(1);
  EXPECT_TRUE(watched.expired());
  EXPECT_EQ(generation.size(), 0u);
  EXPECT_EQ(generation.Find({1, 1, 1}), nullptr);
  generation.Put({2, 2, 2}, Answer(2));
  EXPECT_TRUE(generation.full());  // the new limit, 1
  generation.Put({3, 3, 3}, Answer(3));
  EXPECT_EQ(generation.Find({3, 3, 3}), nullptr);
}

TEST(AnswerGenerationTest, ReserveAllocatesTheArrayThatPutsThenUse) {
  AnswerGeneration generation;  // limit 0: holds nothing
  EXPECT_FALSE(generation.allocated());
  generation.Reserve(2);
  EXPECT_TRUE(generation.allocated());
  EXPECT_EQ(generation.size(), 0u);
  EXPECT_EQ(generation.Find({1, 1, 1}), nullptr);
  const auto a = Answer(1);
  generation.Put({1, 1, 1}, a);
  generation.Put({2, 2, 2}, Answer(2));
  EXPECT_TRUE(generation.full());  // the reserved limit, 2
  generation.Put({3, 3, 3}, Answer(3));
  EXPECT_EQ(generation.Find({3, 3, 3}), nullptr);
  EXPECT_EQ(generation.Find({1, 1, 1}), a);
  // Restarting with the same limit keeps the array.
  generation.Restart(2);
  EXPECT_TRUE(generation.allocated());
  EXPECT_EQ(generation.Find({1, 1, 1}), nullptr);
}

}  // namespace
}  // namespace gputopo::evaluation

#include "policies/engine/normalize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <vector>

namespace gputopo::policies {
namespace {

std::vector<int> None(const std::vector<std::optional<double>>& weighted) {
  return NormalizeScores(weighted, ScoreNormalization::kNone);
}

TEST(NormalizeScoresTest, NoneRoundsHalvesAwayFromZeroWithinZeroToTen) {
  EXPECT_EQ(None({0.0, 0.49999999999999994, 0.5, 2.5, 3.49, 9.4999, 9.5, 10.0}),
            (std::vector<int>{0, 0, 1, 3, 3, 9, 10, 10}));
}

TEST(NormalizeScoresTest, NoneClampsToZeroToTenAndLeavesNodesThatDoNotFitAtZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(None({-0.4, -0.5, -7.0, 10.5, 1e6, nan, std::nullopt}),
            (std::vector<int>{0, 0, 0, 10, 10, 0, 0}));
}

// The rounding is lround's, clamped, for every finite score: each half-way point between -1 and
// 11 and the doubles right beside it, and random scores over -20..20 and 0..10.
TEST(NormalizeScoresTest, NoneRoundsAsClampedLroundForAnyFiniteScore) {
  std::vector<std::optional<double>> weighted;
  for (int k = -2; k <= 22; ++k) {
    const double half = k / 2.0;
    for (double v : {half, std::nextafter(half, -100.0), std::nextafter(half, 100.0)}) {
      weighted.push_back(v);
    }
  }
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> wide(-20.0, 20.0);
  std::uniform_real_distribution<double> range(0.0, 10.0);
  for (int i = 0; i < 100000; ++i) weighted.push_back(i % 2 == 0 ? wide(rng) : range(rng));
  const std::vector<int> rounded = None(weighted);
  ASSERT_EQ(rounded.size(), weighted.size());
  for (size_t i = 0; i < weighted.size(); ++i) {
    ASSERT_EQ(rounded[i], static_cast<int>(std::clamp(std::lround(*weighted[i]), 0L, 10L)))
        << std::hexfloat << *weighted[i];
  }
}

TEST(NormalizeScoresTest, MinMaxStretchesTheCandidatesOverZeroToTen) {
  EXPECT_EQ(NormalizeScores({2.0, std::nullopt, 4.0, 3.0, 2.1}, ScoreNormalization::kMinMax),
            (std::vector<int>{0, 0, 10, 5, 1}));
  // All equal: every node that fits gets 10.
  EXPECT_EQ(NormalizeScores({7.0, 7.0, std::nullopt}, ScoreNormalization::kMinMax),
            (std::vector<int>{10, 10, 0}));
  EXPECT_TRUE(NormalizeScores({}, ScoreNormalization::kMinMax).empty());
}

TEST(NormalizeScoresTest, RankGivesTheBestTenAndEachNextDistinctScoreOneLess) {
  const auto rank = [](const std::vector<std::optional<double>>& weighted) {
    return NormalizeScores(weighted, ScoreNormalization::kRank);
  };
  // Close scores stay apart (min-max would round 5.0001 and 5.0 to the same 10).
  EXPECT_EQ(rank({5.0, 5.0001, std::nullopt, 1.0, 5.0001}), (std::vector<int>{9, 10, 0, 8, 10}));
  EXPECT_EQ(NormalizeScores({5.0, 5.0001, 1.0}, ScoreNormalization::kMinMax),
            (std::vector<int>{10, 10, 0}));
  // Beyond the 11th distinct score everything is 0.
  std::vector<std::optional<double>> many;
  for (int i = 0; i < 15; ++i) many.push_back(static_cast<double>(i));
  EXPECT_EQ(rank(many), (std::vector<int>{0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  // Best first, so that the later scores fall below the eleven levels already kept.
  std::reverse(many.begin(), many.end());
  many.push_back(4.0);
  EXPECT_EQ(rank(many), (std::vector<int>{10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(rank({nan, 2.0}), (std::vector<int>{0, 10}));
  EXPECT_TRUE(rank({}).empty());
  EXPECT_EQ(ParseScoreNormalization("rank"), ScoreNormalization::kRank);
}

}  // namespace
}  // namespace gputopo::policies

namespace gputopo::policies {
namespace {

TEST(NormalizeScoresTest, RankPutsNodesThatMissedLocalityBelowEveryNodeThatMetIt) {
  const auto input = [](double w, bool missed, ScoreNormalization mode) {
    return std::optional<double>(NormalizationInput(w, missed, mode));
  };
  const ScoreNormalization rank = ScoreNormalization::kRank;
  // 9.5 and 8 missed the pod's NVLink island; 3 and 1 met it.
  EXPECT_EQ(NormalizeScores({input(9.5, true, rank), input(3.0, false, rank),
                             input(8.0, true, rank), input(1.0, false, rank)},
                            rank),
            (std::vector<int>{8, 10, 7, 9}));
  // The other modes leave the weighted score alone.
  for (ScoreNormalization mode : {ScoreNormalization::kNone, ScoreNormalization::kMinMax}) {
    EXPECT_EQ(NormalizationInput(9.5, true, mode), 9.5);
  }
  EXPECT_EQ(NormalizationInput(9.5, false, rank), 9.5);
}

// --filter-decides: the highest input wins; ties go to the smallest key, and keys are asked for
// only where there is a tie at the top.
TEST(DecidedCandidateTest, HighestInputWinsAndOnlyTopTiesAskForKeys) {
  const std::vector<std::optional<double>> inputs = {3.0, std::nullopt, 7.5, 7.5, 1.0, 7.5};
  const std::vector<size_t> keys = {9, 9, 40, 20, 9, 30};
  std::vector<size_t> asked;
  const std::optional<size_t> best = DecidedCandidate(
      inputs.size(), [&](size_t i) { return inputs[i]; },
      [&](size_t i) {
        asked.push_back(i);
        return keys[i];
      });
  EXPECT_EQ(best, std::optional<size_t>(3));
  std::sort(asked.begin(), asked.end());
  EXPECT_EQ(asked, (std::vector<size_t>{2, 3, 5}));
  // A node that does not fit never wins, however it would score.
  EXPECT_EQ(DecidedCandidate(
                2, [](size_t i) { return i == 0 ? std::nullopt : std::optional<double>(0.0); },
                [](size_t) { return size_t{0}; }),
            std::optional<size_t>(1));
  EXPECT_FALSE(
      DecidedCandidate(
          3, [](size_t) { return std::optional<double>(); }, [](size_t) { return size_t{0}; })
          .has_value());
  // The tie key depends on the pod, so equal nodes are not always decided the same way.
  EXPECT_NE(FilterDecidesTieKey("uid-a", "node-1") < FilterDecidesTieKey("uid-a", "node-2"),
            FilterDecidesTieKey("uid-b", "node-1") < FilterDecidesTieKey("uid-b", "node-2"))
      << "two pods happen to order these nodes alike; pick other uids";
}

}  // namespace
}  // namespace gputopo::policies

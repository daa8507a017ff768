#include "src/codec/quantity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace gputopo::codec {
namespace {

using ::testing::HasSubstr;

struct MilliCase {
  std::string text;
  int64_t milli;
};

class QuantityMilliAcceptTest : public ::testing::TestWithParam<MilliCase> {};

TEST_P(QuantityMilliAcceptTest, ParsesToThousandths) {
  const MilliCase& c = GetParam();
  Result<int64_t> got = ParseQuantityMilli(c.text);
  ASSERT_TRUE(got.ok()) << "'" << c.text << "': " << got.status().ToString();
  EXPECT_EQ(*got, c.milli) << "'" << c.text << "'";
}

INSTANTIATE_TEST_SUITE_P(
    Table, QuantityMilliAcceptTest,
    ::testing::Values(MilliCase{"1", 1000},                                 // plain units
                      MilliCase{"0", 0},                                    //
                      MilliCase{"250m", 250},                               // milli suffix
                      MilliCase{"1.5", 1500},                               // decimal fraction
                      MilliCase{"0.5", 500},                                //
                      MilliCase{"2k", 2000000},                             // 2 * 10^3 units
                      MilliCase{"3M", 3000000000},                          // 3 * 10^6 units
                      MilliCase{"1Ki", 1024000},                            // 1024 units
                      MilliCase{"1Mi", 1048576000},                         // 2^20 units
                      MilliCase{"1.5Gi", 1610612736000},                    // 1.5 * 2^30 units
                      MilliCase{"1e3", 1000000},                            // decimal exponent
                      MilliCase{"1E3", 1000000},                            // upper-case exponent
                      MilliCase{"1E-3", 1},                                 // 10^-3 units = 1m
                      MilliCase{"1e+2", 100000},                            // explicit + exponent
                      MilliCase{"+2", 2000},                                // explicit sign
                      MilliCase{"-1", -1000},                               // negative
                      MilliCase{"-250m", -250},                             //
                      MilliCase{"0.0001", 1},                               // 0.1m rounds up to 1m
                      MilliCase{"1P", 1000000000000000000},                 // 10^15 units: in range
                      MilliCase{"9200000000000000", 9200000000000000000}),  // the limit
    [](const ::testing::TestParamInfo<MilliCase>& p) { return "Case" + std::to_string(p.index); });

class QuantityMilliRejectTest : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantityMilliRejectTest, IsAnError) {
  const std::string& text = GetParam();
  Result<int64_t> got = ParseQuantityMilli(text);
  ASSERT_FALSE(got.ok()) << "'" << text << "' parsed as " << *got;
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr("quantity"));
}

INSTANTIATE_TEST_SUITE_P(Table, QuantityMilliRejectTest,
                         ::testing::Values("",                       // empty
                                           " ",                      // whitespace only
                                           " 1",                     // leading whitespace
                                           "1 ",                     // trailing whitespace
                                           "abc",                    // not a number
                                           "1.2.3",                  // two decimal points
                                           "1x",                     // unknown suffix
                                           "Mi",                     // suffix without a number
                                           "m",                      //
                                           ".",                      // no digits
                                           "+",                      // sign only
                                           "-",                      //
                                           "1mm",                    // doubled suffix
                                           "1KiB",                   // not a Kubernetes suffix
                                           "1e",                     // exponent without digits
                                           "1e+",                    //
                                           "1e1x",                   // junk in the exponent
                                           "0x10",                   // hex
                                           "1,5",                    // comma
                                           "99999999999999999999",   // 10^20 units: too large
                                           "-99999999999999999999",  // too small
                                           "9200000000000001",       // one past the limit
                                           "1E",                     // 10^18 units: too large
                                           "1e999",                  // way too large
                                           std::string(65, '1')),    // longer than 64 chars
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return "Case" + std::to_string(p.index);
                         });

// Huge quantities are errors, never a wrapped, clamped or NaN-cast number.
INSTANTIATE_TEST_SUITE_P(Huge, QuantityMilliRejectTest,
                         ::testing::Values("9223372036854775807",     // INT64_MAX units
                                           "-9223372036854775808",    // INT64_MIN units
                                           "9223372036854775807m",    // just over 9.2e15 units
                                           "18446744073709551616",    // 2^64 units
                                           "1e30",                    //
                                           "1e+999",                  //
                                           "99999999999999999999Ei",  // ~1.15e38 units
                                           "8Ei"),                    // 8 * 2^60 units
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return "Case" + std::to_string(p.index);
                         });

INSTANTIATE_TEST_SUITE_P(
    NearTheLimit, QuantityMilliAcceptTest,
    ::testing::Values(MilliCase{"-9200000000000000", -9200000000000000000},  // the lower limit
                      MilliCase{"7Pi", 7881299347898368000}),                // 7 * 2^50 units
    [](const ::testing::TestParamInfo<MilliCase>& p) { return "Case" + std::to_string(p.index); });

TEST(QuantityMilliTest, ErrorQuotesTheText) {
  Result<int64_t> got = ParseQuantityMilli("12parsecs");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("12parsecs"));
}

TEST(QuantityMilliTest, EmbeddedNulIsRejected) {
  const std::string text("1\0", 2);
  EXPECT_FALSE(ParseQuantityMilli(text).ok());
}

struct WholeCase {
  std::string text;
  int64_t value;
};

class WholeQuantityAcceptTest : public ::testing::TestWithParam<WholeCase> {};

TEST_P(WholeQuantityAcceptTest, ParsesToAWholeCount) {
  const WholeCase& c = GetParam();
  Result<int64_t> got = ParseWholeQuantity(c.text);
  ASSERT_TRUE(got.ok()) << "'" << c.text << "': " << got.status().ToString();
  EXPECT_EQ(*got, c.value) << "'" << c.text << "'";
}

INSTANTIATE_TEST_SUITE_P(Table, WholeQuantityAcceptTest,
                         ::testing::Values(WholeCase{"2", 2},       //
                                           WholeCase{"0", 0},       //
                                           WholeCase{"8", 8},       //
                                           WholeCase{"2000m", 2},   // 2000m = 2 whole units
                                           WholeCase{"1k", 1000},   //
                                           WholeCase{"1Ki", 1024},  //
                                           WholeCase{"1e3", 1000},  //
                                           WholeCase{"+3", 3},      //
                                           WholeCase{"2.0", 2}),    // a zero fraction is whole
                         [](const ::testing::TestParamInfo<WholeCase>& p) {
                           return "Case" + std::to_string(p.index);
                         });

class WholeQuantityRejectTest : public ::testing::TestWithParam<std::string> {};

TEST_P(WholeQuantityRejectTest, IsAnError) {
  const std::string& text = GetParam();
  Result<int64_t> got = ParseWholeQuantity(text);
  EXPECT_FALSE(got.ok()) << "'" << text << "' parsed as " << *got;
}

INSTANTIATE_TEST_SUITE_P(Table, WholeQuantityRejectTest,
                         ::testing::Values("1500m",  // 1.5 units
                                           "1.5",    //
                                           "1m",     //
                                           "0.5",    //
                                           "1E-3",   //
                                           "abc",    // not a quantity at all
                                           "",       //
                                           "99999999999999999999"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return "Case" + std::to_string(p.index);
                         });

TEST(WholeQuantityTest, FractionErrorSaysWhole) {
  Result<int64_t> got = ParseWholeQuantity("1500m");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("1500m"));
  EXPECT_THAT(got.status().message(), HasSubstr("whole"));
}

}  // namespace
}  // namespace gputopo::codec

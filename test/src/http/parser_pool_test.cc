#include "src/http/parser_pool.h"

#include <gtest/gtest.h>

#include <string>

namespace gputopo::http {
namespace {

constexpr size_t kKeep = 256;

// A valid ExtenderArgs of at least `bytes` bytes (trailing whitespace).
std::string Args(size_t bytes) {
  std::string body =
      R"({"Pod":{"metadata":{"name":"p","namespace":"d","uid":"u"}},"NodeNames":["n1","n2"]})";
  if (body.size() < bytes) body.append(bytes - body.size(), ' ');
  return body;
}

TEST(ParserPoolTest, SmallBodiesShareAPooledParser) {
  ParserPool pool(1 << 20, kKeep, 2);
  const std::string body = Args(10);
  const extender::ExtenderRequestParser* first = nullptr;
  {
    ParserPool::Lease lease = pool.Acquire(body.size());
    ASSERT_TRUE(lease.ParseArgs(body).ok());
    first = lease.parser();
  }
  ParserPool::Lease again = pool.Acquire(body.size());
  EXPECT_EQ(again.parser(), first);
  EXPECT_FALSE(pool.HoldsLargeParser());
}

TEST(ParserPoolTest, ALargeParserIsKeptWhileLargeBodiesComeAndFreedAfter) {
  ParserPool pool(1 << 20, kKeep, 2);
  const std::string large = Args(kKeep * 4);
  const extender::ExtenderRequestParser* kept = nullptr;
  {
    ParserPool::Lease lease = pool.Acquire(large.size());
    ASSERT_TRUE(lease.ParseArgs(large).ok());
    kept = lease.parser();
  }
  EXPECT_TRUE(pool.HoldsLargeParser());
  {
    // The next large body gets the same parser, its buffers already grown.
    ParserPool::Lease lease = pool.Acquire(large.size());
    EXPECT_EQ(lease.parser(), kept);
    auto args = lease.ParseArgs(large);
    ASSERT_TRUE(args.ok());
    EXPECT_EQ((*args)->node_names.size(), 2u);
  }
  EXPECT_TRUE(pool.HoldsLargeParser());
  // A small body ends the run of large ones: the large parser is freed, not pooled.
  const std::string small = Args(10);
  {
    ParserPool::Lease lease = pool.Acquire(small.size());
    EXPECT_FALSE(pool.HoldsLargeParser());
    EXPECT_NE(lease.parser(), kept);
    ASSERT_TRUE(lease.ParseArgs(small).ok());
  }
  EXPECT_FALSE(pool.HoldsLargeParser());
}

TEST(ParserPoolTest, AParserThatFailedOnALargeBodyIsNotKept) {
  ParserPool pool(1 << 20, kKeep, 2);
  const std::string malformed = "[" + std::string(kKeep * 4, '[');
  {
    ParserPool::Lease lease = pool.Acquire(malformed.size());
    EXPECT_FALSE(lease.ParseArgs(malformed).ok());
  }
  EXPECT_FALSE(pool.HoldsLargeParser());
  // A failed parse of a small body leaves nothing kept either: it ends the large ones.
  const std::string large = Args(kKeep * 4);
  {
    ParserPool::Lease lease = pool.Acquire(large.size());
    ASSERT_TRUE(lease.ParseArgs(large).ok());
  }
  ASSERT_TRUE(pool.HoldsLargeParser());
  {
    ParserPool::Lease lease = pool.Acquire(3);
    EXPECT_FALSE(lease.ParseArgs("{x}").ok());
  }
  EXPECT_FALSE(pool.HoldsLargeParser());
}

}  // namespace
}  // namespace gputopo::http

// Fault-injection rules of the fake API server (FailNext, DelayNext, HoldNext) and the Status
// an injected failure is answered with.
//
// Pure functions over rule lists the caller guards (FakeApiServer::Impl::mu_).
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_FAULTS_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_FAULTS_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "test/support/fake_api_server/status.h"

namespace gputopo::testing::fake_api {

struct FaultRule {
  std::string method;  // upper case, "*" (any) or "WATCH" (watch GETs only)
  std::string path_prefix;
  int status = 0;                      // FailNext
  std::chrono::milliseconds delay{0};  // DelayNext
  int remaining = 0;
  bool hold = false;  // HoldNext: wait for ReleaseHeld() instead of `delay`

  bool Matches(const std::string& request_method, const std::string& path, bool watch) const;
};

// Takes one use of the first rule matching the request (erasing it once used up), or nullopt.
std::optional<FaultRule> TakeRule(std::vector<FaultRule>& rules, const std::string& method,
                                  const std::string& path, bool watch);

// The Status the real server would send for `status` (429 with retryAfterSeconds 1, 500
// InternalError, 504 Timeout; others with their reason and a fixed message).
ApiError InjectedError(int status);

}  // namespace gputopo::testing::fake_api

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_FAULTS_H_

// List continue tokens in kube-apiserver's format: base64url of
// {"v":"meta.k8s.io/v1","rv":<list resourceVersion>,"start":"<next key>\u0000"}.
//
// Pure functions; thread-safe.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_CONTINUE_TOKEN_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_CONTINUE_TOKEN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gputopo::testing::fake_api {

struct ContinueToken {
  // The snapshot's resourceVersion; -1 in the token of a 410 (continue from the latest state).
  int64_t resource_version = 0;
  std::string start;  // the first key of the next page
};

std::string EncodeContinue(int64_t resource_version, const std::string& start);
// nullopt when `token` is not base64url, not JSON, or not version meta.k8s.io/v1.
std::optional<ContinueToken> DecodeContinue(std::string_view token);

}  // namespace gputopo::testing::fake_api

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_CONTINUE_TOKEN_H_

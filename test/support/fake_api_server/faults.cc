// Fault-injection rules and injected Status bodies of the fake API server.
#include "test/support/fake_api_server/faults.h"

namespace gputopo::testing::fake_api {

bool FaultRule::Matches(const std::string& request_method, const std::string& path,
                        bool watch) const {
  if (path.compare(0, path_prefix.size(), path_prefix) != 0) return false;
  if (method == "*") return true;
  if (method == "WATCH") return watch;
  return method == request_method;
}

std::optional<FaultRule> TakeRule(std::vector<FaultRule>& rules, const std::string& method,
                                  const std::string& path, bool watch) {
  for (auto it = rules.begin(); it != rules.end(); ++it) {
    if (!it->Matches(method, path, watch)) continue;
    FaultRule taken = *it;
    if (--it->remaining <= 0) rules.erase(it);
    return taken;
  }
  return std::nullopt;
}

ApiError InjectedError(int status) {
  const std::string text = "injected by FakeApiServer";
  switch (status) {
    case 429:
      return {429, "TooManyRequests", "Too many requests, please try again later.",
              json{{"retryAfterSeconds", 1}}};
    case 500:
      return {500, "InternalError", "Internal error occurred: " + text,
              json{{"causes", json::array({json{{"message", text}}})}}};
    case 504:
      return {504,
              "Timeout",
              "Timeout: request did not complete within requested timeout - " + text,
              {}};
    default:
      return {status, ReasonForCode(status), text, {}};
  }
}

}  // namespace gputopo::testing::fake_api

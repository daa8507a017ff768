// AccessControl: who may read /metrics and /debug on the admin listener. Kubernetes delegated
// authentication and authorization, as kube-rbac-proxy and controller-runtime's secure metrics
// do: the request's bearer token goes to a TokenReview, and the user it names to a
// SubjectAccessReview for the non-resource URL (verb "get", the request path), so RBAC decides
// (a ClusterRole with nonResourceURLs: ["/metrics", "/debug", "/debug/*"]).
//
// Answers are cached, keyed by the SHA-256 of the token (the token itself is never kept):
// authentications for authn_ttl, allowed decisions for allow_ttl and denied ones for deny_ttl
// (controller-runtime's defaults: 1 min, 5 min, 30 s). Errors reaching the API server are not
// cached. At most max_entries of each; the cache is emptied when full.
//
// Thread safety: thread-safe. The reviewer's calls may block (they are API calls); Check runs on
// the admin lane, never on the request path of the extender verbs.
#ifndef GPUTOPO_SRC_HTTP_ACCESS_CONTROL_H_
#define GPUTOPO_SRC_HTTP_ACCESS_CONTROL_H_

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gputopo/clock.h"
#include "gputopo/mutex.h"
#include "gputopo/status.h"

namespace gputopo::http {

struct ReviewedUser {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
};

// The two reviews, as the API server answers them (KubeClient implements it).
class AccessReviewer {
 public:
  virtual ~AccessReviewer() = default;
  // The user the token authenticates as; nullopt when the API server says it does not.
  virtual Result<std::optional<ReviewedUser>> ReviewToken(std::string_view token) = 0;
  // Whether `user` may `verb` the non-resource URL `path`.
  virtual Result<bool> ReviewAccess(const ReviewedUser& user, std::string_view verb,
                                    std::string_view path) = 0;
};

class AccessControl {
 public:
  struct Options {
    std::chrono::milliseconds authn_ttl{std::chrono::minutes(1)};
    std::chrono::milliseconds allow_ttl{std::chrono::minutes(5)};
    std::chrono::milliseconds deny_ttl{std::chrono::seconds(30)};
    size_t max_entries = 4096;
  };
  enum class Verdict { kAllowed, kUnauthenticated, kForbidden, kUnavailable };
  struct Decision {
    Verdict verdict = Verdict::kForbidden;
    std::string reason;  // for the reply and the log line
    int http_status() const;
  };

  // Both must outlive the AccessControl.
  AccessControl(AccessReviewer& reviewer, const Clock& clock, Options options);
  AccessControl(AccessReviewer& reviewer, const Clock& clock)
      : AccessControl(reviewer, clock, Options{}) {}

  // `authorization` is the request's Authorization header (or, through the API server's proxy,
  // its X-Gputopo-Authorization); `path` the request path.
  Decision Check(std::string_view authorization, std::string_view path);

 private:
  struct CachedUser {
    std::optional<ReviewedUser> user;
    std::chrono::steady_clock::time_point expires;
  };
  struct CachedAccess {
    bool allowed = false;
    std::chrono::steady_clock::time_point expires;
  };

  AccessReviewer& reviewer_;
  const Clock& clock_;
  const Options options_;
  Mutex mutex_;
  std::unordered_map<std::string, CachedUser> users_ GPUTOPO_GUARDED_BY(mutex_);  // by token hash
  std::unordered_map<std::string, CachedAccess> accesses_
      GPUTOPO_GUARDED_BY(mutex_);  // hash + path
};

}  // namespace gputopo::http

#endif  // GPUTOPO_SRC_HTTP_ACCESS_CONTROL_H_

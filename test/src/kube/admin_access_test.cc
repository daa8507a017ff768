// The admin listener in live mode: /metrics and /debug apart from the verbs, behind TokenReview
// and SubjectAccessReview against the fake API server; the verbs and probes stay where they were.
#include <gtest/gtest.h>
#include <httplib.h>

#include "src/http/access_control.h"
#include "test/src/kube/live_app.h"
#include "test/support/fake_clock.h"

namespace gputopo {
namespace {

class AdminAccessTest : public testing::LiveAppTest {
 protected:
  void SetUp() override {
    LiveAppTest::SetUp();
    if (HasFatalFailure()) return;
    server_.AddTokenUser("prometheus-token", "system:serviceaccount:monitoring:prometheus",
                         {"system:serviceaccounts"});
    server_.AddTokenUser("intruder-token", "system:serviceaccount:default:default");
    server_.AllowNonResource("system:serviceaccount:monitoring:prometheus", "get", "/metrics");
    server_.AllowNonResource("system:serviceaccount:monitoring:prometheus", "get", "/debug/*");
    app::AppOptions options = LiveOptions(std::chrono::seconds(120));
    options.server.admin_host = "127.0.0.1";
    options.server.admin_port = 0;
    app_ = StartApp(options);
    ASSERT_TRUE(app_);
  }
  int Get(int port, const std::string& path, const std::string& token = "") {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(120, 0);
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    auto res = client.Get(path.c_str(), headers);
    return res ? res->status : -1;
  }
};

TEST_F(AdminAccessTest, MetricsAndDebugNeedATokenThatRbacAllows) {
  const int admin = app_->admin_port();
  ASSERT_GT(admin, 0);
  EXPECT_EQ(Get(admin, "/metrics"), 401);
  EXPECT_EQ(Get(admin, "/metrics", "forged-token"), 401);
  EXPECT_EQ(Get(admin, "/metrics", "intruder-token"), 403);
  EXPECT_EQ(Get(admin, "/debug/nodes", "intruder-token"), 403);
  EXPECT_EQ(Get(admin, "/metrics", "prometheus-token"), 200);
  EXPECT_EQ(Get(admin, "/debug/nodes", "prometheus-token"), 200);
  EXPECT_EQ(Get(admin, "/debug", "prometheus-token"), 403);  // RBAC allowed /debug/* only
  // Answers are cached: asking again sends no new review.
  const size_t reviews =
      server_.RequestCount("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews");
  EXPECT_EQ(Get(admin, "/metrics", "prometheus-token"), 200);
  EXPECT_EQ(server_.RequestCount("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews"),
            reviews);
  // Probes on both listeners; the admin listener serves no verbs, the main one no admin pages.
  EXPECT_EQ(Get(admin, "/healthz"), 200);
  EXPECT_EQ(Get(app_->port(), "/readyz"), 200);
  EXPECT_EQ(Get(app_->port(), "/metrics", "prometheus-token"), 404);
  EXPECT_EQ(Get(app_->port(), "/debug/nodes", "prometheus-token"), 404);
  // /ui is a page without data: served to anyone who reaches the admin listener; the data it
  // reads (/debug) is not.
  EXPECT_EQ(Get(admin, "/ui"), 200);
  EXPECT_EQ(Get(app_->port(), "/ui"), 404);
  httplib::Client admin_client("127.0.0.1", admin);
  auto filter = admin_client.Post("/filter", "{}", "application/json");
  ASSERT_TRUE(filter);
  EXPECT_EQ(filter->status, 404);
}

// Through the API server's pods/proxy the caller's token arrives in X-Gputopo-Authorization (the
// API server consumed Authorization): reviewed the same way, never taken on trust.
TEST_F(AdminAccessTest, AProxiedTokenIsReviewedLikeAnAuthorizationHeader) {
  const int admin = app_->admin_port();
  auto get = [&](const std::string& header) {
    httplib::Client client("127.0.0.1", admin);
    client.set_read_timeout(120, 0);
    auto res = client.Get("/debug/nodes", {{"X-Gputopo-Authorization", header}});
    return res ? res->status : -1;
  };
  EXPECT_EQ(get("Bearer prometheus-token"), 200);
  EXPECT_EQ(get("Bearer intruder-token"), 403);
  EXPECT_EQ(get("Bearer forged-token"), 401);
  EXPECT_EQ(get("prometheus-token"), 401) << "the same Bearer scheme as Authorization";
}

// A reviewer that counts its calls and fails on demand.
class CountingReviewer : public http::AccessReviewer {
 public:
  Result<std::optional<http::ReviewedUser>> ReviewToken(std::string_view token) override {
    ++token_reviews;
    if (fail) return Unavailable("API server down");
    if (token != "good") return std::optional<http::ReviewedUser>();
    return std::optional<http::ReviewedUser>(http::ReviewedUser{"alice", "u1", {}});
  }
  Result<bool> ReviewAccess(const http::ReviewedUser&, std::string_view,
                            std::string_view path) override {
    ++access_reviews;
    if (fail) return Unavailable("API server down");
    return path == "/metrics";
  }
  int token_reviews = 0;
  int access_reviews = 0;
  bool fail = false;
};

TEST(AccessControlTest, CachesByTokenHashForTheirTtlAndNeverCachesErrors) {
  CountingReviewer reviewer;
  testing::FakeClock clock;
  http::AccessControl access(reviewer, clock);
  using Verdict = http::AccessControl::Verdict;
  EXPECT_EQ(access.Check("", "/metrics").verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(access.Check("Basic abc", "/metrics").verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(access.Check("Bearer bad", "/metrics").verdict, Verdict::kUnauthenticated);
  EXPECT_EQ(access.Check("bearer good", "/metrics").verdict, Verdict::kAllowed);
  EXPECT_EQ(access.Check("Bearer good", "/debug").verdict, Verdict::kForbidden);
  EXPECT_EQ(reviewer.token_reviews, 2);  // "bad" and "good", each once
  EXPECT_EQ(reviewer.access_reviews, 2);
  // Within the TTLs nothing is asked again, even with the API server down.
  reviewer.fail = true;
  EXPECT_EQ(access.Check("Bearer good", "/metrics").verdict, Verdict::kAllowed);
  EXPECT_EQ(access.Check("Bearer good", "/debug").verdict, Verdict::kForbidden);
  EXPECT_EQ(reviewer.access_reviews, 2);
  // A denial expires after 30 s, an allowance after 5 min; then an error is an error.
  clock.Advance(std::chrono::seconds(31));
  EXPECT_EQ(access.Check("Bearer good", "/metrics").verdict, Verdict::kAllowed);
  const http::AccessControl::Decision down = access.Check("Bearer good", "/debug");
  EXPECT_EQ(down.verdict, Verdict::kUnavailable);
  EXPECT_EQ(down.http_status(), 503);
  clock.Advance(std::chrono::minutes(5));
  EXPECT_EQ(access.Check("Bearer good", "/metrics").verdict, Verdict::kUnavailable);
  reviewer.fail = false;
  EXPECT_EQ(access.Check("Bearer good", "/metrics").verdict, Verdict::kAllowed);
}

}  // namespace
}  // namespace gputopo

// LiveAppTest: gputopo in live mode (app::App) against the fake API server, the fixture of the
// tests that run the whole server over the Kubernetes API (live_tests).
#ifndef GPUTOPO_TEST_SRC_KUBE_LIVE_APP_H_
#define GPUTOPO_TEST_SRC_KUBE_LIVE_APP_H_

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "src/app/app.h"
#include "src/app/system_clock.h"
#include "test/src/kube/kube_fixtures.h"
#include "test/support/fake_api_server.h"

namespace gputopo::testing {

class LiveAppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ASSERT_TRUE(server_.Start());
  }
  void TearDown() override {
    if (app_) app_->Stop();
    server_.Stop();
  }

  // An app against server_, serving on a free port, whose API calls wait up to
  // `request_timeout`.
  app::AppOptions LiveOptions(std::chrono::milliseconds request_timeout) const {
    app::AppOptions options;
    options.server.http.port = 0;
    options.kube = kube::KubeConfig{};
    options.kube->server = server_.base_url();
    options.client.request_timeout = request_timeout;
    return options;
  }
  // Creates and starts the app, and waits until its cache has synced. Each step that fails is a
  // test failure; null when the app could not be created.
  std::unique_ptr<app::App> StartApp(const app::AppOptions& options) {
    auto created = app::App::Create(options, clock_);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    if (!created.ok()) return nullptr;
    auto app = std::move(created).value();
    EXPECT_TRUE(app->Start().ok());
    EXPECT_TRUE(WaitFor([&] { return app->Ready(); }));
    return app;
  }

  FakeApiServer server_;
  app::SystemClock clock_;
  std::unique_ptr<app::App> app_;
};

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SRC_KUBE_LIVE_APP_H_

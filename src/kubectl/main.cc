// kubectl-gputopo: `kubectl gputopo nodes|topo|explain` once on PATH (see src/kubectl/plugin.h).
#include <curl/curl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "src/kubectl/plugin.h"

int main(int argc, char** argv) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  spdlog::set_level(spdlog::level::off);  // errors are reported as one line each, below
  gputopo::kubectl::PluginEnvironment env{std::cout, std::cerr, isatty(STDOUT_FILENO) == 1, {}};
  for (const char* name : {"KUBECONFIG", "HOME", "NO_COLOR"}) {
    if (const char* value = std::getenv(name); value != nullptr) env.vars[name] = value;
  }
  const int code = gputopo::kubectl::RunPlugin({argv + 1, argv + argc}, env);
  curl_global_cleanup();
  return code;
}

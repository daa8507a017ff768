// Kubernetes objects for the live-path tests, as the API server stores them.
#ifndef GPUTOPO_TEST_SRC_KUBE_KUBE_FIXTURES_H_
#define GPUTOPO_TEST_SRC_KUBE_KUBE_FIXTURES_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace gputopo::testing {

// Polls `done` until it holds or `timeout` passes. The default is long on purpose: a test waits
// for something it expects to happen, and a slow run (TSan, a loaded machine) must not give up
// first; a passing test never waits it out.
template <typename Predicate>
bool WaitFor(Predicate done, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

// A pending pod requesting `gpus` nvidia.com/gpu.
inline nlohmann::json GpuPod(const std::string& ns, const std::string& name, int gpus,
                             nlohmann::json annotations = nlohmann::json::object()) {
  const std::string n = std::to_string(gpus);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"annotations", annotations}}},
          {"spec",
           {{"schedulerName", "gputopo-scheduler"},
            {"containers",
             {{{"name", "main"},
               {"image", "pause"},
               {"resources",
                {{"requests", {{"nvidia.com/gpu", n}}}, {"limits", {{"nvidia.com/gpu", n}}}}}}}}}},
          {"status", {{"phase", "Pending"}}}};
}

// A pod that needs no GPU (gputopo must not keep it).
inline nlohmann::json CpuPod(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"containers", {{{"name", "main"}, {"image", "pause"}}}}}},
          {"status", {{"phase", "Pending"}}}};
}

// An 8-GPU HGX H100 node (shipped profile), time-sliced `replicas` ways.
inline nlohmann::json GpuNode(const std::string& name, int replicas = 1) {
  const std::string alloc = std::to_string(8 * replicas);
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels",
         {{"gputopo.io/topology-profile", "hgx-h100"},
          {"nvidia.com/gpu.replicas", std::to_string(replicas)}}}}},
      {"status",
       {{"capacity", {{"nvidia.com/gpu", alloc}}}, {"allocatable", {{"nvidia.com/gpu", alloc}}}}}};
}

inline nlohmann::json CpuNode(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status", {{"allocatable", {{"cpu", "8"}}}}}};
}

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SRC_KUBE_KUBE_FIXTURES_H_

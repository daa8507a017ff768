// The resources the fake API server stores and watches: core/v1 Nodes and Pods, and policy/v1
// PodDisruptionBudgets.
//
// Constants and pure functions; thread-safe.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_RESOURCE_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_RESOURCE_H_

#include <cstddef>
#include <string>

#include "test/support/fake_api_server/wire.h"

namespace gputopo::testing::fake_api {

enum class Resource : size_t { kNodes = 0, kPods = 1, kDisruptionBudgets = 2 };
inline constexpr size_t kResourceCount = 3;
inline size_t Index(Resource r) { return static_cast<size_t>(r); }

struct ResourceInfo {
  const char* kind;         // "Node"
  const char* list_kind;    // "NodeList"
  const char* plural;       // "nodes", as in URLs and NotFound details
  const char* api_version;  // "v1", "policy/v1"
  bool namespaced;
};
inline constexpr ResourceInfo kResourceInfo[kResourceCount] = {
    {"Node", "NodeList", "nodes", "v1", false},
    {"Pod", "PodList", "pods", "v1", true},
    {"PodDisruptionBudget", "PodDisruptionBudgetList", "poddisruptionbudgets", "policy/v1", true}};
inline const ResourceInfo& Info(Resource r) { return kResourceInfo[Index(r)]; }

// The store key of `object`: its name for a node, "namespace/name" for a namespaced object.
inline std::string Key(Resource r, const json& object) {
  return Info(r).namespaced ? PodKey(Namespace(object), Name(object)) : Name(object);
}

}  // namespace gputopo::testing::fake_api

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_RESOURCE_H_

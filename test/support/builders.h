// Fluent builders for test objects, after kube-scheduler's MakeNode()/MakePod():
//   MakeNode().Name("n1").Profile("dgx1-v100").Replicas(2).Allocatable(16).Obj()
//   MakePod().Name("web-1").Gpus(1).OwnedByReplicaSet("web-5d8f", "5d8f").Obj()
#ifndef GPUTOPO_TEST_SUPPORT_BUILDERS_H_
#define GPUTOPO_TEST_SUPPORT_BUILDERS_H_

#include <string>

#include "gputopo/machine_topology.h"
#include "gputopo/node_info.h"
#include "gputopo/pod_info.h"

namespace gputopo::testing {

class NodeBuilder {
 public:
  NodeBuilder& Name(std::string name) {
    node_.name = std::move(name);
    return *this;
  }
  NodeBuilder& Profile(std::string profile) {
    node_.label_topology_profile = std::move(profile);
    return *this;
  }
  NodeBuilder& GpuCount(int count) {
    node_.label_gpu_count = std::to_string(count);
    return *this;
  }
  NodeBuilder& Replicas(int replicas) {
    node_.label_gpu_replicas = std::to_string(replicas);
    return *this;
  }
  NodeBuilder& Allocatable(int64_t gpus) {
    node_.allocatable_gpus = gpus;
    return *this;
  }
  // status.allocatable cpu (millicores) and memory (bytes).
  NodeBuilder& Host(int64_t cpu_milli, int64_t memory_bytes) {
    node_.allocatable_cpu_milli = cpu_milli;
    node_.allocatable_memory_bytes = memory_bytes;
    return *this;
  }
  NodeBuilder& Topology(const MachineTopology& machine) {
    node_.annotation_topology = Result<MachineTopology>(machine);
    return *this;
  }
  NodeBuilder& CorruptTopology(std::string why) {
    node_.annotation_topology = Result<MachineTopology>(InvalidArgument(std::move(why)));
    return *this;
  }
  NodeInfo Obj() const { return node_; }

 private:
  NodeInfo node_;
};

class PodBuilder {
 public:
  PodBuilder() {
    pod_.namespace_name = "default";
    pod_.phase = PodPhase::kPending;
  }
  PodBuilder& Namespace(std::string ns) {
    pod_.namespace_name = std::move(ns);
    return *this;
  }
  // Also sets the uid to "uid-<name>" unless Uid() is called.
  PodBuilder& Name(std::string name) {
    pod_.name = std::move(name);
    if (!uid_set_) pod_.uid = "uid-" + pod_.name;
    return *this;
  }
  PodBuilder& Uid(std::string uid) {
    pod_.uid = std::move(uid);
    uid_set_ = true;
    return *this;
  }
  PodBuilder& Gpus(int64_t gpus) {
    pod_.gpu_request = gpus;
    return *this;
  }
  PodBuilder& Annotation(std::string key, std::string value) {
    pod_.annotations.emplace_back(std::move(key), std::move(value));
    return *this;
  }
  PodBuilder& Group(std::string group) { return Annotation("gputopo.io/group", std::move(group)); }
  PodBuilder& OwnedBy(std::string kind, std::string name) {
    pod_.owners.push_back({std::move(kind), std::move(name), "owner-uid", true});
    return *this;
  }
  // A Deployment's pod: owned by ReplicaSet "<deployment>-<hash>", labelled with the hash.
  PodBuilder& OwnedByDeployment(const std::string& deployment,
                                const std::string& hash = "5d8f7c9b6d") {
    pod_.pod_template_hash = hash;
    return OwnedBy("ReplicaSet", deployment + "-" + hash);
  }
  PodBuilder& OnNode(std::string node) {
    pod_.node_name = std::move(node);
    return *this;
  }
  PodBuilder& Assigned(std::string gpus) {
    return Annotation("gputopo.io/assigned-gpus", std::move(gpus));
  }
  PodBuilder& Phase(PodPhase phase) {
    pod_.phase = phase;
    return *this;
  }
  PodBuilder& Priority(int32_t priority) {
    pod_.priority = priority;
    return *this;
  }
  PodBuilder& ResourceVersion(std::string rv) {
    pod_.resource_version = std::move(rv);
    return *this;
  }
  // cpu (millicores) and memory (bytes) requests.
  PodBuilder& Requests(int64_t cpu_milli, int64_t memory_bytes) {
    pod_.cpu_request_milli = cpu_milli;
    pod_.memory_request_bytes = memory_bytes;
    return *this;
  }
  PodInfo Obj() const { return pod_; }

 private:
  PodInfo pod_;
  bool uid_set_ = false;
};

inline NodeBuilder MakeNode() { return NodeBuilder(); }
inline PodBuilder MakePod() { return PodBuilder(); }

// Replica `i` of Deployment `deployment` in namespace ml (a ReplicaSet-style name), pending.
inline PodInfo DeploymentReplica(const std::string& deployment, int i, int gpus = 1) {
  return MakePod()
      .Namespace("ml")
      .Name(deployment + "-5d8f7c9b6d-" + std::to_string(i))
      .Gpus(gpus)
      .OwnedByDeployment(deployment)
      .Obj();
}

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SUPPORT_BUILDERS_H_

// FakeKubelet: an in-process stand-in for the kubelet's device manager and PodResources server,
// on unix sockets in a temporary directory laid out like /var/lib/kubelet:
//   <dir>/device-plugins/kubelet.sock   Registration (device plugin API v1beta1)
//   <dir>/pod-resources/kubelet.sock    PodResourcesLister (v1)
//
// It behaves as kubelet does, not as a plugin would like it to (fake_kubelet.cc lists where it
// simplifies):
// - Register: the version must be "v1beta1" and the resource name an extended resource
//   ("<domain>/<name>", not kubernetes.io); kubelet then dials the plugin back on
//   <dir>/device-plugins/<endpoint> and calls GetDevicePluginOptions before answering, then reads
//   ListAndWatch on a thread of its own, keeping the latest device list. A plugin registering a
//   resource again replaces the previous registration (its stream is cancelled).
// - Admission, one container at a time in kubelet's order (init containers, then the others):
//   devices an earlier init container held are reused first; the rest come from the healthy
//   devices no other container holds. When the plugin's options say
//   get_preferred_allocation_available, GetPreferredAllocation is asked (available_deviceIDs =
//   those free devices plus the reused ones, must_include_deviceIDs = the reused ones,
//   allocation_size = the container's request) and its answer, intersected with what is free, is
//   taken first; kubelet fills whatever is still missing itself. Then Allocate with the chosen
//   IDs (one container request; the answer must have exactly one container response) and, when
//   the options say pre_start_required, PreStartContainer.
// - PodResourcesLister List / GetAllocatableResources / Get from what it allocated: one
//   ContainerDevices per device ID (as kubelet's pod_devices.go builds them), with the device's
//   NUMA node as topology; init containers are not listed.
// - Restart(): the servers stop, every socket in device-plugins/ is deleted (kubelet removes the
//   directory's contents at start), plugins' streams are cancelled and their devices forgotten,
//   and kubelet.sock is created again: plugins must re-register. Allocations survive (kubelet's
//   checkpoint).
// - The "stock plugin" variant (AddStockPlugin): no plugin process; the fake answers as kubelet
//   with NVIDIA's k8s-device-plugin registered would, picking replicas itself with the plugin's
//   distributed policy (each device from the GPU with the fewest replicas in use), with no idea
//   of gputopo's assignment. AllocateDirectly() records an allocation without any plugin call.
//
// Thread safety: every public method may be called from any thread while the servers run.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_KUBELET_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_KUBELET_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gputopo/status.h"

namespace gputopo::testing {

class FakeKubelet {
 public:
  // A device as a plugin advertised it in ListAndWatch.
  struct Device {
    std::string id;
    bool healthy = true;
    int numa_node = -1;  // -1: no topology
    friend bool operator==(const Device&, const Device&) = default;
  };

  // What kubelet knows of a registered plugin.
  struct PluginInfo {
    std::string resource_name;
    std::string endpoint;
    bool stock = false;  // AddStockPlugin
    bool get_preferred_allocation_available = false;
    bool pre_start_required = false;
    bool connected = false;       // the ListAndWatch stream is open
    int device_lists_seen = 0;    // ListAndWatch answers received
    std::vector<Device> devices;  // the latest list
  };

  struct Container {
    std::string name;
    int64_t request = 0;  // of the resource being admitted
    bool init = false;    // an init container (runs to completion, before the others)
  };

  struct Pod {
    std::string namespace_name = "default";
    std::string name;
    std::string uid;
    std::vector<Container> containers;  // in the pod spec's order; init ones may be anywhere
  };

  // One container's admission.
  struct ContainerAllocation {
    std::string container;
    bool init = false;
    std::vector<std::string> device_ids;  // what kubelet allocated
    // GetPreferredAllocation: what was asked and answered (empty when not called).
    bool preferred_asked = false;
    std::vector<std::string> preferred_available;
    std::vector<std::string> preferred_must_include;
    int preferred_size = 0;
    std::vector<std::string> preferred_answer;
    // Allocate's answer for the container.
    std::map<std::string, std::string> envs;
    std::map<std::string, std::string> annotations;
    std::vector<std::string> cdi_devices;
  };

  struct PodAllocation {
    Pod pod;
    std::string resource_name;
    std::vector<ContainerAllocation> containers;  // in admission order
  };

  FakeKubelet();   // a fresh temporary directory; nothing served until Start()
  ~FakeKubelet();  // Stop()s and removes the directory
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // Serves Registration and PodResourcesLister. False (with the reason on stderr) when a socket
  // cannot be bound.
  bool Start();
  // Stops serving and cancels the plugins' streams; the sockets are removed. Idempotent.
  void Stop();
  // kubelet restarted: Stop(), every socket in device-plugins/ deleted, registrations forgotten,
  // Start() again. Allocations survive.
  bool Restart();

  std::string kubelet_dir() const;
  std::string device_plugins_dir() const;    // <dir>/device-plugins
  std::string registration_socket() const;   // <dir>/device-plugins/kubelet.sock
  std::string pod_resources_socket() const;  // <dir>/pod-resources/kubelet.sock

  // --- Registration ---
  // Registers a stock NVIDIA-like plugin for `resource_name` serving `devices` (no socket).
  void AddStockPlugin(std::string resource_name, std::vector<Device> devices);
  std::optional<PluginInfo> Plugin(const std::string& resource_name) const;
  // Register calls answered (accepted or not) since construction, and those refused.
  int register_calls() const;
  std::vector<std::string> refused_registrations() const;
  // Waits until `resource_name` is registered, connected, and has received at least
  // `min_lists` device lists (counted since its latest registration). False on timeout.
  bool WaitForPlugin(const std::string& resource_name, int min_lists,
                     std::chrono::milliseconds timeout) const;
  // Waits until `register_calls()` reaches `count`. False on timeout.
  bool WaitForRegisterCalls(int count, std::chrono::milliseconds timeout) const;

  // --- Admission ---
  // Admits the pod's containers that request `resource_name`, one at a time (init containers
  // first), through the registered plugin. A container already allocated is not asked again.
  // Errors as kubelet's: no such plugin (FailedPrecondition), not enough devices
  // (ResourceExhausted), a plugin call that failed (Unavailable / Internal, with its message).
  // Containers admitted before a failure keep their devices, as in kubelet.
  Result<PodAllocation> AdmitPod(const Pod& pod, const std::string& resource_name);
  // Records `device_ids` as allocated to each named container (in `pod`'s order) without asking
  // any plugin: a pod admitted by someone else's plugin, as observe mode sees it.
  Status AllocateDirectly(const Pod& pod, const std::string& resource_name,
                          const std::map<std::string, std::vector<std::string>>& device_ids);
  // The pod is gone (deleted, or terminated): its devices are free and PodResources stops
  // listing it. False when kubelet did not know it.
  bool RemovePod(const std::string& namespace_name, const std::string& name);
  std::vector<PodAllocation> Allocations() const;
  // Device IDs allocated to some container now, for `resource_name`.
  std::vector<std::string> DevicesInUse(const std::string& resource_name) const;

  // --- PodResources ---
  int pod_resources_list_calls() const;
  // From now on (across restarts too) every PodResources call is answered with bytes that are
  // not a protobuf message, as a broken or foreign server would (true), or served as usual
  // (false). Takes effect at once when serving (false if the server cannot be restarted), else
  // at the next Start().
  bool SetPodResourcesUnreadable(bool unreadable);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_KUBELET_H_

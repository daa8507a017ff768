# Included from test/src/agent/CMakeLists.txt. Enforce mode: NVIDIA's time-slicing config, pod
# identification and replica choice (pure, table-driven), and the device plugin against the fake
# kubelet over real gRPC on unix sockets.
gputopo_add_test(device_plugin_tests
  SOURCES
    device_plugin_test.cc
    enforce_api_test.cc
    enforce_mode_test.cc
    pod_identification_test.cc
    replica_choice_test.cc
    time_slicing_config_test.cc
  LIBS gputopo_agent_plugin gputopo_agent_kubelet gputopo_fake_kubelet gputopo_kubelet_proto
       gputopo_fake_api_server yaml-cpp
  LABELS agent)
add_dependencies(device_plugin_tests gputopo_fake_nvml)
target_compile_definitions(device_plugin_tests PRIVATE
  GPUTOPO_FAKE_NVML="$<TARGET_FILE:gputopo_fake_nvml>")

# The node's pods from the API server (a live list, and the watched cache with its own thread)
# against the fake API server, and the PodResources answer the observer shares with admissions:
# no gRPC, so these run under TSan too (label kube). The gRPC tests
# above cannot: Debian's gRPC is built without TSan and synchronises through its own atomics and
# futexes, which TSan does not see, so every RPC's hand-over between threads reads as a race.
gputopo_add_test(pod_source_tests
  SOURCES
    kube_pod_source_test.cc
    pod_resources_view_test.cc
    watched_pod_source_test.cc
  LIBS gputopo_agent_plugin gputopo_fake_api_server
  LABELS kube)

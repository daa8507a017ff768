# Included from src/CMakeLists.txt. The node agent's enforce mode: the device plugin (gRPC, kept
# inside device_plugin.cc), pod identification and replica choice (pure), NVIDIA's time-slicing
# config file (yaml-cpp), the pods bound to the node from the API server (a watched cache, and a
# live list when it lags), and the wiring `gputopo agent run` starts (AgentServer, with enforce
# mode when asked).
add_library(gputopo_agent_plugin STATIC
  agent/agent_server.cc
  agent/device_plugin.cc
  agent/enforce_mode.cc
  agent/kube_pod_source.cc
  agent/pod_identification.cc
  agent/replica_choice.cc
  agent/time_slicing_config.cc
  agent/watched_pod_source.cc
)
target_include_directories(gputopo_agent_plugin PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(gputopo_agent_plugin
  PUBLIC gputopo_domain gputopo_topology gputopo_agent_kubelet gputopo_agent gputopo_adapters
  PRIVATE gputopo_kubelet_proto yaml-cpp nlohmann_json::nlohmann_json gputopo_warnings)

target_link_libraries(gputopo PRIVATE gputopo_agent_plugin)

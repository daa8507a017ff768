# Included from src/CMakeLists.txt. The node agent's enforce mode: the device plugin (gRPC, kept
# inside device_plugin.cc), pod identification and replica choice (pure), and NVIDIA's
# time-slicing config file (yaml-cpp).
add_library(gputopo_agent_plugin STATIC
  agent/device_plugin.cc
  agent/pod_identification.cc
  agent/replica_choice.cc
  agent/time_slicing_config.cc
)
target_include_directories(gputopo_agent_plugin PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(gputopo_agent_plugin
  PUBLIC gputopo_domain gputopo_topology gputopo_agent_kubelet
  PRIVATE gputopo_kubelet_proto yaml-cpp gputopo_warnings)

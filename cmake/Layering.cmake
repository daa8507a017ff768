# Enforces the dependency direction src -> policies -> topology -> include.
#
# gputopo_forbid(<target> <layer-name> HEADERS <h>...) puts a directory of generated headers, each
# an #error, before every other include directory of <target>. A file in that layer that
# includes, say, <nlohmann/json.hpp> then fails to build with "layering: ...".
set(GPUTOPO_POISON_ROOT ${CMAKE_BINARY_DIR}/layering)

# Headers of the adapter libraries (JSON, HTTP, curl, logging, CLI).
set(GPUTOPO_ADAPTER_HEADERS
  nlohmann/json.hpp nlohmann/json_fwd.hpp simdjson.h httplib.h curl/curl.h
  spdlog/spdlog.h spdlog/fmt/fmt.h fmt/core.h fmt/format.h CLI/CLI.hpp)
# Boost.Graph belongs to topology/ alone.
set(GPUTOPO_GRAPH_HEADERS
  boost/graph/adjacency_list.hpp boost/graph/connected_components.hpp
  boost/graph/graph_traits.hpp boost/graph/adjacency_matrix.hpp
  boost/graph/properties.hpp boost/graph/breadth_first_search.hpp
  boost/graph/dijkstra_shortest_paths.hpp boost/graph/undirected_graph.hpp)

function(gputopo_forbid target layer)
  cmake_parse_arguments(ARG "" "" "HEADERS" ${ARGN})
  set(dir ${GPUTOPO_POISON_ROOT}/${layer})
  foreach(header IN LISTS ARG_HEADERS)
    set(path ${dir}/${header})
    if(NOT EXISTS ${path})
      file(WRITE ${path}
        "#error \"layering: the ${layer} layer must not include <${header}>; "
        "see shared STYLE.md: pure logic knows nothing about JSON, HTTP, curl or logging, "
        "and Boost.Graph lives in topology/\"\n")
    endif()
  endforeach()
  target_include_directories(${target} BEFORE PRIVATE ${dir})
endfunction()

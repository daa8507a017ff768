# cmake -DROOT=<repo> -P check_includes.cmake
# Fails when a file of an inner layer includes a header of an outer one:
# include/ -> nothing of ours; topology/ -> include/; policies/ -> topology/, include/;
# evaluation/ and cluster/ -> policies/ and below.
set(failures "")
foreach(rule "include:topology/|policies/|evaluation/|cluster/|src/"
             "topology:policies/|evaluation/|cluster/|src/" "policies:evaluation/|cluster/|src/"
             "evaluation:cluster/|src/" "cluster:evaluation/|src/")
  string(REPLACE ":" ";" parts "${rule}")
  list(GET parts 0 layer)
  list(GET parts 1 forbidden)
  file(GLOB_RECURSE files "${ROOT}/${layer}/*.h" "${ROOT}/${layer}/*.cc")
  foreach(file IN LISTS files)
    file(STRINGS "${file}" lines REGEX "^#include \"(${forbidden})")
    foreach(line IN LISTS lines)
      string(APPEND failures "  ${file}: ${line}\n")
    endforeach()
  endforeach()
endforeach()
if(failures)
  message(FATAL_ERROR "layering: inner layers include outer ones:\n${failures}")
endif()
message(STATUS "layering: include directions are clean")

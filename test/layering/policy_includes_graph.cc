// Compiled by the layering tests with the policies layer's include path: it must NOT compile.
#include <boost/graph/adjacency_list.hpp>

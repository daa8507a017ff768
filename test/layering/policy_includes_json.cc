// Compiled by the layering tests with the policies layer's include path: it must NOT compile.
#include <nlohmann/json.hpp>

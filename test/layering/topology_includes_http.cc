// Compiled by the layering tests with the topology layer's include path: it must NOT compile.
#include <httplib.h>

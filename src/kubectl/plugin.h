// kubectl-gputopo: the kubectl plugin (`kubectl gputopo nodes|topo|explain`).
//
// It reads the cluster through the API server, as kubectl does (--kubeconfig, $KUBECONFIG or
// ~/.kube/config; --context; -n/-A), builds the NodeStates gputopo's extender builds, and
// prints them: it works without reaching gputopo. With --server URL (gputopo's admin listener,
// e.g. through `kubectl port-forward`), `explain` shows gputopo's own record of the pod and
// `nodes` says where gputopo's view differs from what was computed here.
//
// Exit codes, as kubectl's: 0 done, 1 any error (one line "error: ..." on stderr).
//
// Thread safety: one call at a time (curl_global_init must have been called).
#ifndef GPUTOPO_SRC_KUBECTL_PLUGIN_H_
#define GPUTOPO_SRC_KUBECTL_PLUGIN_H_

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace gputopo::kubectl {

struct PluginEnvironment {
  std::ostream& out;
  std::ostream& err;
  bool terminal = false;                    // stdout is a terminal: colour by default
  std::map<std::string, std::string> vars;  // KUBECONFIG, HOME, NO_COLOR
};

// `args` without the program name.
int RunPlugin(const std::vector<std::string>& args, PluginEnvironment& env);

}  // namespace gputopo::kubectl

#endif  // GPUTOPO_SRC_KUBECTL_PLUGIN_H_

// kubectl-gputopo: the kubectl plugin (`kubectl gputopo nodes|topo|explain`).
//
// It reads the cluster through the API server, as kubectl does (--kubeconfig, $KUBECONFIG or
// ~/.kube/config; --context; --token, or the user's exec credential plugin, run once,
// exec_credential.h; -n/-A), builds the NodeStates gputopo's extender builds, and prints them:
// it works without reaching gputopo. It also asks gputopo's own record (`explain`) and view
// (`nodes` says where it differs from what was computed here): through the API server's
// pods/proxy to each gputopo replica, or straight to --server URL (gputopo_access.h).
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

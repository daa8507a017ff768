// The kubeconfig's exec credential plugin (users[].user.exec), run once as kubectl runs it: EKS
// (`aws eks get-token`), GKE (`gke-gcloud-auth-plugin`), OIDC login helpers. The program gets
// the kubeconfig's env on top of this process's, and KUBERNETES_EXEC_INFO (an ExecCredential
// with spec.interactive false: standard input is not a terminal here), and must print an
// ExecCredential of the same apiVersion whose status holds a token, or a client certificate and
// key. The credential lives as long as the command, so it is asked for once, never refreshed
// (provideClusterInfo is not supported: the program gets no cluster).
//
// Thread safety: a function of its arguments.
#ifndef GPUTOPO_SRC_KUBECTL_EXEC_CREDENTIAL_H_
#define GPUTOPO_SRC_KUBECTL_EXEC_CREDENTIAL_H_

#include <string>
#include <vector>

#include "gputopo/status.h"
#include "src/kube/kube_config.h"

namespace gputopo::kubectl {

// KUBERNETES_EXEC_INFO, then the plugin's env, as "NAME=value".
std::vector<std::string> ExecEnvironment(const kube::ExecCredentialPlugin& plugin);

// Reads the ExecCredential `output` (printed by `plugin`) into `config`'s token or client
// certificate. Error, naming the plugin, when it is not an ExecCredential of plugin.api_version
// or holds no credential.
Status ApplyExecCredential(const kube::ExecCredentialPlugin& plugin, const std::string& output,
                           kube::KubeConfig& config);

// Runs config.exec (when set) with a 30 s limit and applies its answer. Errors name the command,
// and add its installHint when it cannot be found.
Status RunExecCredentialPlugin(kube::KubeConfig& config);

}  // namespace gputopo::kubectl

#endif  // GPUTOPO_SRC_KUBECTL_EXEC_CREDENTIAL_H_

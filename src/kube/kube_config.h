// How to reach and authenticate to the Kubernetes API server.
//
// In-cluster (the default): KUBERNETES_SERVICE_HOST/PORT, the service account token and CA under
// /var/run/secrets/kubernetes.io/serviceaccount. Or a kubeconfig file (--kubeconfig): its
// current context's cluster (server, certificate-authority[-data], insecure-skip-tls-verify)
// and user (token, tokenFile, client-certificate[-data] + client-key[-data]). An exec credential
// plugin (users[].user.exec, as EKS and GKE kubeconfigs use) is read only when the caller asks
// (kubectl-gputopo runs it, src/kubectl/exec_credential.h); a long-running gputopo would need to
// run it again as its credential expires, so there it is an error, as auth-provider is.
//
// A token file is read again before each request (cheaply), so a rotated projected token is
// picked up without a restart.
//
// Thread safety: a value type.
#ifndef GPUTOPO_SRC_KUBE_KUBE_CONFIG_H_
#define GPUTOPO_SRC_KUBE_KUBE_CONFIG_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gputopo/status.h"

namespace gputopo::kube {

// users[].user.exec of a kubeconfig: a program that prints an ExecCredential.
struct ExecCredentialPlugin {
  std::string api_version;  // client.authentication.k8s.io/v1 or v1beta1
  std::string command;  // a relative path with a '/' is resolved against the kubeconfig's folder
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string install_hint;
};

struct KubeConfig {
  std::string server;   // "https://10.0.0.1:443"
  std::string ca_file;  // PEM file; empty: ca_pem or the system store
  std::string ca_pem;   // PEM contents (certificate-authority-data, decoded)
  bool insecure_skip_tls_verify = false;
  std::string token;            // a bearer token, or
  std::string token_file;       // a file holding one (re-read on every request)
  std::string client_cert_pem;  // client certificate authentication
  std::string client_key_pem;
  std::string client_cert_file;
  std::string client_key_file;
  std::string context;         // the kubeconfig context used, for logs
  std::string namespace_name;  // the context's namespace; empty when it names none
  std::optional<ExecCredentialPlugin>
      exec;  // to run for the credential (LoadKubeconfig's allow_exec)
};

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// The in-cluster configuration from the given environment values and service-account folder.
// Error when the environment does not say where the API server is, or the token is missing.
Result<KubeConfig> InClusterConfig(const std::string& service_host, const std::string& service_port,
                                   const std::string& service_account_dir = kServiceAccountDir);

// The current context of a kubeconfig file (YAML or JSON), or `context` when given. Relative
// file paths in it are resolved against the file's folder, as kubectl does. A user with an exec
// plugin is an error unless `allow_exec` (then `exec` is set, and nothing is run).
Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context = "",
                                  bool allow_exec = false);

// The bearer token to send now: `token`, or the current contents of `token_file`.
Result<std::string> CurrentToken(const KubeConfig& config);

}  // namespace gputopo::kube

#endif  // GPUTOPO_SRC_KUBE_KUBE_CONFIG_H_

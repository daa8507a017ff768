#include "src/kubectl/exec_credential.h"

#include <nlohmann/json.hpp>

#include "src/agent/command_runner.h"

namespace gputopo::kubectl {
namespace {

using nlohmann::json;

std::string StringAt(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::vector<std::string> ExecEnvironment(const kube::ExecCredentialPlugin& plugin) {
  const json info = {{"apiVersion", plugin.api_version},
                     {"kind", "ExecCredential"},
                     {"spec", {{"interactive", false}}}};
  std::vector<std::string> env = {"KUBERNETES_EXEC_INFO=" + info.dump()};
  for (const auto& [name, value] : plugin.env) env.push_back(name + "=" + value);
  return env;
}

Status ApplyExecCredential(const kube::ExecCredentialPlugin& plugin, const std::string& output,
                           kube::KubeConfig& config) {
  const std::string who = "exec plugin " + plugin.command;
  const json credential = json::parse(output, nullptr, false);
  if (!credential.is_object() || StringAt(credential, "kind") != "ExecCredential") {
    return InvalidArgument(who + ": did not print an ExecCredential");
  }
  if (StringAt(credential, "apiVersion") != plugin.api_version) {
    return InvalidArgument(who + ": printed apiVersion '" + StringAt(credential, "apiVersion") +
                           "', the kubeconfig asks for '" + plugin.api_version + "'");
  }
  const json status = credential.value("status", json::object());
  if (!status.is_object()) return InvalidArgument(who + ": its status is not an object");
  const std::string token = StringAt(status, "token");
  const std::string cert = StringAt(status, "clientCertificateData");
  const std::string key = StringAt(status, "clientKeyData");
  if (!token.empty()) {
    config.token = token;
    config.token_file.clear();
    return Status::Ok();
  }
  if (!cert.empty() && !key.empty()) {
    config.client_cert_pem = cert;  // PEM, not base64, in an ExecCredential
    config.client_key_pem = key;
    return Status::Ok();
  }
  return InvalidArgument(who + ": its ExecCredential holds no token and no client certificate");
}

Status RunExecCredentialPlugin(kube::KubeConfig& config) {
  if (!config.exec) return Status::Ok();
  const kube::ExecCredentialPlugin& plugin = *config.exec;
  agent::SubprocessRunner runner(std::chrono::seconds(30), ExecEnvironment(plugin));
  std::vector<std::string> argv = {plugin.command};
  argv.insert(argv.end(), plugin.args.begin(), plugin.args.end());
  Result<std::string> output = runner.Run(argv);
  if (!output.ok()) {
    std::string message = "exec plugin " + plugin.command + ": " + output.status().message();
    if (output.status().code() == StatusCode::kNotFound && !plugin.install_hint.empty()) {
      message += " (" + plugin.install_hint + ")";
    }
    return Status(output.status().code(), message);
  }
  return ApplyExecCredential(plugin, *output, config);
}

}  // namespace gputopo::kubectl

#include "src/kube/kube_config.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gputopo::kube {
namespace {

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

Result<std::string> DecodeBase64(const std::string& text) {
  std::string clean;
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ') clean.push_back(c);
  }
  if (clean.size() % 4 != 0) return InvalidArgument("base64 data has a bad length");
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()),
                                static_cast<int>(clean.size()));
  if (n < 0) return InvalidArgument("invalid base64 data");
  size_t size = static_cast<size_t>(n);
  for (size_t i = clean.size(); i > 0 && clean[i - 1] == '='; --i) --size;  // padding
  out.resize(size);
  return out;
}

std::string Resolve(const std::filesystem::path& base, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (base / path).string();
}

// Finds the entry named `name` in a kubeconfig list ("clusters", "users", "contexts").
YAML::Node Named(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const YAML::Node& entry : list) {
    if (entry["name"] && entry["name"].as<std::string>() == name) return entry;
  }
  return YAML::Node();
}

std::string Text(const YAML::Node& node, const char* key) {
  return node && node[key] ? node[key].as<std::string>() : "";
}

}  // namespace

Result<KubeConfig> InClusterConfig(const std::string& service_host, const std::string& service_port,
                                   const std::string& service_account_dir) {
  if (service_host.empty() || service_port.empty()) {
    return FailedPrecondition(
        "not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset): pass --kubeconfig or "
        "--snapshot");
  }
  KubeConfig config;
  const bool ipv6 = service_host.find(':') != std::string::npos;
  config.server =
      "https://" + (ipv6 ? "[" + service_host + "]" : service_host) + ":" + service_port;
  config.token_file = service_account_dir + "/token";
  config.ca_file = service_account_dir + "/ca.crt";
  config.context = "in-cluster";
  if (!std::filesystem::exists(config.token_file)) {
    return NotFound("service account token " + config.token_file + " is missing");
  }
  return config;
}

Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context_name,
                                  bool allow_exec) {
  Result<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  try {
    const YAML::Node root = YAML::Load(*text);  // JSON is YAML too
    const std::string current = context_name.empty() ? Text(root, "current-context") : context_name;
    if (current.empty()) return InvalidArgument(path + ": no current-context");
    const YAML::Node context = Named(root["contexts"], current)["context"];
    if (!context) return NotFound(path + ": context '" + current + "' not found");
    const YAML::Node cluster = Named(root["clusters"], Text(context, "cluster"))["cluster"];
    if (!cluster) return NotFound(path + ": cluster of context '" + current + "' not found");
    const YAML::Node user = Named(root["users"], Text(context, "user"))["user"];

    KubeConfig config;
    config.context = current;
    config.namespace_name = Text(context, "namespace");
    config.server = Text(cluster, "server");
    if (config.server.empty()) return InvalidArgument(path + ": cluster has no server");
    config.ca_file = Resolve(base, Text(cluster, "certificate-authority"));
    if (auto data = Text(cluster, "certificate-authority-data"); !data.empty()) {
      Result<std::string> pem = DecodeBase64(data);
      if (!pem.ok()) return pem.status().WithContext(path + ": certificate-authority-data");
      config.ca_pem = *pem;
    }
    config.insecure_skip_tls_verify =
        cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>();
    if (user) {
      if (user["auth-provider"] || (user["exec"] && !allow_exec)) {
        return InvalidArgument(path + ": user '" + Text(context, "user") +
                               "' uses an exec or auth-provider plugin, which gputopo does not "
                               "run; use a token, a token file or a client certificate");
      }
      if (const YAML::Node exec = user["exec"]) {
        ExecCredentialPlugin plugin;
        plugin.api_version = Text(exec, "apiVersion");
        plugin.command = Text(exec, "command");
        if (plugin.command.empty()) {
          return InvalidArgument(path + ": user '" + Text(context, "user") +
                                 "': exec has no command");
        }
        if (plugin.command.find('/') != std::string::npos) {
          plugin.command = Resolve(base, plugin.command);
        }
        if (exec["args"] && exec["args"].IsSequence()) {
          for (const YAML::Node& arg : exec["args"]) plugin.args.push_back(arg.as<std::string>());
        }
        if (exec["env"] && exec["env"].IsSequence()) {
          for (const YAML::Node& var : exec["env"]) {
            plugin.env.emplace_back(Text(var, "name"), Text(var, "value"));
          }
        }
        plugin.install_hint = Text(exec, "installHint");
        config.exec = std::move(plugin);
      }
      config.token = Text(user, "token");
      config.token_file = Resolve(base, Text(user, "tokenFile"));
      config.client_cert_file = Resolve(base, Text(user, "client-certificate"));
      config.client_key_file = Resolve(base, Text(user, "client-key"));
      for (auto [key, target] : {std::pair{"client-certificate-data", &config.client_cert_pem},
                                 std::pair{"client-key-data", &config.client_key_pem}}) {
        if (auto data = Text(user, key); !data.empty()) {
          Result<std::string> pem = DecodeBase64(data);
          if (!pem.ok()) return pem.status().WithContext(path + ": " + key);
          *target = *pem;
        }
      }
    }
    return config;
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ": not a valid kubeconfig: " + e.what());
  }
}

Result<std::string> CurrentToken(const KubeConfig& config) {
  if (config.token_file.empty()) return config.token;
  Result<std::string> token = ReadWholeFile(config.token_file);
  if (!token.ok()) return token.status();
  return Trim(*token);
}

}  // namespace gputopo::kube

#include "src/kubectl/gputopo_access.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

namespace gputopo::kubectl {
namespace {

using nlohmann::json;

// key=value pairs of a comma-separated equality selector; nullopt when one is malformed.
std::optional<std::map<std::string, std::string>> ParseSelector(std::string_view selector) {
  std::map<std::string, std::string> pairs;
  while (!selector.empty()) {
    const size_t comma = selector.find(',');
    std::string_view term = selector.substr(0, comma);
    selector = comma == std::string_view::npos ? std::string_view() : selector.substr(comma + 1);
    const size_t equals = term.find('=');
    if (equals == 0 || equals == std::string_view::npos) return std::nullopt;
    std::string_view value = term.substr(equals + 1);
    if (!value.empty() && value.front() == '=') value.remove_prefix(1);  // "=="
    pairs[std::string(term.substr(0, equals))] = std::string(value);
  }
  return pairs;
}

std::string StringAt(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The container port named "admin", or 0.
int AdminPort(const json& pod) {
  const json spec = pod.value("spec", json::object());
  for (const json& container : spec.value("containers", json::array())) {
    if (!container.is_object()) continue;
    for (const json& port : container.value("ports", json::array())) {
      if (port.is_object() && StringAt(port, "name") == "admin" &&
          port.value("containerPort", json()).is_number_integer()) {
        return port["containerPort"].get<int>();
      }
    }
  }
  return 0;
}

class Direct final : public GputopoAccess {
 public:
  Direct(std::string url, std::unique_ptr<kube::KubeClient> client)
      : url_(std::move(url)), client_(std::move(client)) {}
  std::vector<GputopoAnswer> GetAll(std::string_view path) override {
    std::vector<GputopoAnswer> answers;
    answers.push_back({url_, client_->Get(path)});
    return answers;
  }
  std::string Describe() const override { return url_; }

 private:
  const std::string url_;
  std::unique_ptr<kube::KubeClient> client_;
};

class Proxied final : public GputopoAccess {
 public:
  Proxied(kube::KubeClient& api, std::string namespace_name, std::string selector, int port,
          std::string bearer_token)
      : api_(api),
        namespace_(std::move(namespace_name)),
        selector_(std::move(selector)),
        port_(port) {
    if (!bearer_token.empty()) {
      headers_.push_back(std::string(kProxiedAuthorizationHeader) + ": Bearer " + bearer_token);
    }
  }

  std::vector<GputopoAnswer> GetAll(std::string_view path) override {
    if (!replicas_) {
      Result<std::string> list = api_.Get("/api/v1/namespaces/" + namespace_ + "/pods");
      replicas_ = list.ok() ? ReplicasIn(*list, selector_, port_)
                            : Result<std::vector<GputopoReplica>>(list.status());
    }
    std::vector<GputopoAnswer> answers;
    if (!replicas_->ok()) {
      answers.push_back({Describe(), replicas_->status().WithContext("listing gputopo's pods")});
      return answers;
    }
    if ((*replicas_)->empty()) {
      answers.push_back({Describe(), NotFound("no running pod in namespace " + namespace_ +
                                              " matches " + selector_)});
      return answers;
    }
    for (const GputopoReplica& replica : **replicas_) {
      const std::string proxy = "/api/v1/namespaces/" + namespace_ + "/pods/" + replica.pod + ":" +
                                std::to_string(replica.port) + "/proxy";
      GputopoAnswer answer{"pod " + namespace_ + "/" + replica.pod,
                           api_.Get(proxy + std::string(path), headers_)};
      if (!answer.body.ok() && headers_.empty() &&
          answer.body.status().message().find("HTTP 401") != std::string::npos) {
        answer.body = Status(answer.body.status().code(),
                             answer.body.status().message() +
                                 " (the kubeconfig has no bearer token to forward, and the API "
                                 "server's proxy cannot forward client certificates: pass "
                                 "--token, or --server after kubectl port-forward)");
      }
      answers.push_back(std::move(answer));
    }
    return answers;
  }

  std::string Describe() const override { return "gputopo's pods in " + namespace_; }

 private:
  kube::KubeClient& api_;
  const std::string namespace_;
  const std::string selector_;
  const int port_;
  std::vector<std::string> headers_;
  std::optional<Result<std::vector<GputopoReplica>>> replicas_;  // listed on the first GetAll
};

}  // namespace

Result<std::vector<GputopoReplica>> ReplicasIn(std::string_view pod_list, std::string_view selector,
                                               int port) {
  const std::optional<std::map<std::string, std::string>> wanted = ParseSelector(selector);
  if (!wanted) return InvalidArgument("bad label selector '" + std::string(selector) + "'");
  const json list = json::parse(pod_list, nullptr, false);
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) {
    return Internal("the pod list is not a PodList");
  }
  std::vector<GputopoReplica> replicas;
  for (const json& pod : list["items"]) {
    if (!pod.is_object()) continue;
    const json metadata = pod.value("metadata", json::object());
    const json labels = metadata.value("labels", json::object());
    const bool matches =
        labels.is_object() && std::all_of(wanted->begin(), wanted->end(), [&](const auto& kv) {
          return StringAt(labels, kv.first.c_str()) == kv.second && labels.contains(kv.first);
        });
    const json status = pod.value("status", json::object());
    if (!matches || StringAt(status, "phase") != "Running" || StringAt(status, "podIP").empty()) {
      continue;
    }
    const int admin = AdminPort(pod);
    replicas.push_back({StringAt(metadata, "name"), port != 0 ? port : admin != 0 ? admin : 8889});
  }
  std::sort(replicas.begin(), replicas.end(),
            [](const auto& a, const auto& b) { return a.pod < b.pod; });
  return replicas;
}

std::unique_ptr<GputopoAccess> DirectAccess(std::string url,
                                            std::unique_ptr<kube::KubeClient> client) {
  return std::make_unique<Direct>(std::move(url), std::move(client));
}

std::unique_ptr<GputopoAccess> ProxiedAccess(kube::KubeClient& api, std::string namespace_name,
                                             std::string selector, int port,
                                             std::string bearer_token) {
  return std::make_unique<Proxied>(api, std::move(namespace_name), std::move(selector), port,
                                   std::move(bearer_token));
}

std::string LatestRecordTime(const nlohmann::json& record) {
  std::string latest;
  if (!record.is_object()) return latest;
  for (const char* part : {"filter", "prioritize", "bind", "preempt"}) {
    if (record.contains(part) && record[part].is_object())
      latest = std::max(latest, StringAt(record[part], "time"));
  }
  return latest;
}

}  // namespace gputopo::kubectl

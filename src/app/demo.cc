#include "src/app/demo.h"

#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "src/app/embedded_data.h"
#include "src/codec/extender_codec.h"

namespace gputopo::app {
namespace {

using nlohmann::json;

std::string Fixed1(double v) {
  char text[16];
  std::snprintf(text, sizeof(text), "%.1f", v);
  std::string s = text;
  if (s.size() > 2 && s.substr(s.size() - 2) == ".0") s.resize(s.size() - 2);
  return s;
}

// POSTs `body`; error unless the server answers 200 with JSON.
Result<json> PostJson(httplib::Client& client, const std::string& path, const std::string& body) {
  httplib::Result res = client.Post(path, body, "application/json");
  if (!res) return Unavailable("POST " + path + ": " + httplib::to_string(res.error()));
  if (res->status != 200) {
    return Internal("POST " + path + " answered " + std::to_string(res->status) + ": " + res->body);
  }
  json parsed = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Internal("POST " + path + " answered with invalid JSON");
  return parsed;
}

std::string Summarize(const json& failures) {
  std::string out;
  for (const auto& [reason, count] : failures.items()) {
    out += (out.empty() ? "" : "; ") + std::to_string(count.get<int>()) + " x " + reason;
  }
  return out;
}

}  // namespace

std::string DemoClusterJson() {
  for (const EmbeddedFile& f : EmbeddedDemo()) {
    if (f.name == "cluster.json") return std::string(f.contents);
  }
  return "";
}

Result<std::vector<DemoPlacement>> ReplayPods(const std::string& host, int port,
                                              const std::vector<std::string>& pods,
                                              const std::vector<std::string>& node_names,
                                              std::ostream& out) {
  httplib::Client client(host, port);
  client.set_read_timeout(30, 0);
  std::vector<DemoPlacement> placements;
  for (size_t i = 0; i < pods.size(); ++i) {
    const json pod = json::parse(pods[i], nullptr, false);
    if (pod.is_discarded()) return InvalidArgument("demo pod is not JSON");
    DemoPlacement p;
    const std::string ns = pod["metadata"].value("namespace", "default");
    const std::string name = pod["metadata"].value("name", "");
    p.pod = ns + "/" + name;
    // kube-scheduler sends candidates in no particular order: rotate them per pod.
    std::vector<std::string> candidates = node_names;
    std::rotate(candidates.begin(), candidates.begin() + static_cast<long>(i % candidates.size()),
                candidates.end());
    std::string names;
    for (const std::string& n : candidates) {
      if (!names.empty()) names += ",";
      extender::AppendJsonString(names, n);
    }
    const std::string args =
        "{\"Pod\":" + pods[i] + ",\"Nodes\":null,\"NodeNames\":[" + names + "]}";

    Result<json> filtered = PostJson(client, "/filter", args);
    if (!filtered.ok()) return filtered.status();
    std::vector<std::string> feasible;
    if (const json& list = (*filtered)["NodeNames"]; list.is_array()) {
      for (const json& n : list) feasible.push_back(n.get<std::string>());
    }
    const std::string error = filtered->value("Error", "");
    if (feasible.size() > 1) {
      Result<json> scores = PostJson(client, "/prioritize", args);
      if (!scores.ok()) return scores.status();
      // Highest score wins; kube-scheduler breaks ties at random, the demo by name.
      std::string best;
      int best_score = -1;
      for (const json& hp : *scores) {
        const std::string host_name = hp.value("Host", "");
        const int score = hp.value("Score", 0);
        if (score > best_score || (score == best_score && host_name < best)) {
          best = host_name;
          best_score = score;
        }
      }
      feasible = {best};
    }
    if (!feasible.empty()) {
      json bind = {{"PodName", name},
                   {"PodNamespace", ns},
                   {"PodUID", pod["metadata"].value("uid", "")},
                   {"Node", feasible.front()}};
      Result<json> bound = PostJson(client, "/bind", bind.dump());
      if (!bound.ok()) return bound.status();
      if (!bound->value("Error", "").empty())
        p.why = "bind failed: " + bound->value("Error", "");
      else
        p.node = feasible.front();
    }
    httplib::Result debug = client.Get("/debug/pods/" + ns + "/" + name);
    const json history =
        debug && debug->status == 200 ? json::parse(debug->body, nullptr, false) : json();
    const std::string requirements = history.is_object() ? history.value("requirements", "") : "";
    if (const auto pos = requirements.find("group "); pos != std::string::npos) {
      p.group = requirements.substr(pos + 6, requirements.find(',', pos) - pos - 6);
    }
    if (!p.node.empty() && history.is_object() && history.contains("bind")) {
      const json& b = history["bind"];
      p.gpus = b.value("gpus", std::vector<std::string>{});
      p.placement = b.value("placement", "");
      p.score = b.value("weightedScore", 0.0);
      for (const json& c : b.value("components", json::array())) {
        p.why += (p.why.empty() ? "" : " | ") + c.value("name", "") + " " +
                 Fixed1(c.value("score", 0.0));
      }
    } else if (p.node.empty() && p.why.empty()) {
      if (!error.empty())
        p.why = error;
      else if (history.is_object() && history.contains("filter")) {
        p.why = Summarize(history["filter"].value("failureReasons", json::object()));
      }
    }
    out << p.pod << "\n    wants: "
        << (requirements.empty() ? "(its annotations could not be read)" : requirements) << "\n";
    if (!p.node.empty()) {
      out << "    -> " << p.node << "  " << p.placement << "  score " << Fixed1(p.score) << "  ["
          << p.why << "]\n";
    } else {
      out << "    -> stays Pending: " << p.why << "\n";
    }
    placements.push_back(std::move(p));
  }

  // Per spread group, how many distinct physical GPUs its replicas got.
  std::map<std::string, std::pair<int, std::set<std::string>>> groups;
  for (const DemoPlacement& p : placements) {
    if (p.node.empty() || p.group.empty()) continue;
    auto& [count, gpus] = groups[p.group];
    ++count;
    for (const std::string& g : p.gpus) gpus.insert(p.node + "/" + g);
  }
  out << "\nReplicas per group on distinct physical GPUs:\n";
  for (const auto& [group, entry] : groups) {
    if (entry.first < 2) continue;
    out << "    " << group << ": " << entry.first << " pods on " << entry.second.size()
        << " distinct GPUs\n";
  }
  return placements;
}

}  // namespace gputopo::app

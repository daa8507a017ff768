// FakeApiServer::Impl's pods/proxy: GET /api/v1/namespaces/{ns}/pods/{[scheme:]name[:port]}/proxy/
// {path}, forwarded to the pod's status.podIP as kube-apiserver's pod ResourceLocation and its
// proxy handler do: the caller is authenticated first (the pipeline's bearer-token check), the
// Authorization header is consumed (not forwarded), other end-to-end headers and the query are,
// X-Forwarded-For is added, and the backend's status, Content-Type and body come back as they
// are. A backend that cannot be reached is a 503 "error trying to reach service: ...".
// Simplified: only GET (and HEAD); only http (an "https:" scheme prefix is not implemented); the
// real server refuses loopback and other non-global-unicast pod IPs ("address not allowed"),
// which the fake must allow, since every backend of a test is on 127.0.0.1; no port in the name
// means the first container port, as on the real server.
#include <cctype>
#include <set>

#include "test/support/fake_api_server/impl.h"

namespace gputopo::testing {
namespace {

using fake_api::ApiError;
using fake_api::json;

// Hop-by-hop headers (RFC 9110 7.6.1) and what the proxy consumes or sets itself; httplib also
// lists the connection's addresses among the request headers.
bool Forwarded(const std::string& name) {
  static const std::set<std::string> kDropped = {"authorization",
                                                 "connection",
                                                 "keep-alive",
                                                 "proxy-authenticate",
                                                 "proxy-authorization",
                                                 "te",
                                                 "trailer",
                                                 "transfer-encoding",
                                                 "upgrade",
                                                 "host",
                                                 "content-length",
                                                 "accept-encoding",
                                                 "remote_addr",
                                                 "remote_port",
                                                 "local_addr",
                                                 "local_port"};
  return kDropped.count(fake_api::ToLower(name)) == 0;
}

}  // namespace

void FakeApiServer::Impl::ProxyToPod(const httplib::Request& req, httplib::Response& res,
                                     const std::string& ns, const std::string& target) {
  if (req.method != "GET" && req.method != "HEAD") {
    return Reply(res, fake_api::NotImplemented("pods/proxy with " + req.method,
                                               "kubectl-gputopo only reads through it"));
  }
  // [scheme:]name[:port], as utilnet.SplitSchemeNamePort reads it.
  std::string name = target;
  std::string port;
  const size_t first = target.find(':');
  if (first != std::string::npos) {
    const size_t second = target.find(':', first + 1);
    if (second != std::string::npos) {
      if (target.substr(0, first) != "http") {
        return Reply(res, fake_api::NotImplemented("pods/proxy to " + target.substr(0, first),
                                                   "the fake proxies plain http"));
      }
      name = target.substr(first + 1, second - first - 1);
      port = target.substr(second + 1);
    } else {
      name = target.substr(0, first);
      port = target.substr(first + 1);
    }
  }
  std::optional<json> pod = Get(Resource::kPods, fake_api::PodKey(ns, name));
  if (!pod) return Reply(res, fake_api::NotFound("pods", name));
  if (port.empty()) {
    for (const json& container : (*pod)["spec"].value("containers", json::array())) {
      const json ports = container.value("ports", json::array());
      if (!ports.empty() && ports[0].value("containerPort", json()).is_number_integer()) {
        port = std::to_string(ports[0]["containerPort"].get<int>());
        break;
      }
    }
  }
  const std::string ip =
      pod->contains("status") ? (*pod)["status"].value("podIP", std::string()) : std::string();
  if (ip.empty()) return Reply(res, fake_api::BadRequest("address not allowed"));
  int port_number = 80;
  if (!port.empty()) {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(),
                                        [](unsigned char c) { return std::isdigit(c) != 0; })) {
      return Reply(res, fake_api::BadRequest("invalid port \"" + port + "\""));
    }
    port_number = std::stoi(port);
  }

  const std::string prefix = "/api/v1/namespaces/" + ns + "/pods/" + target + "/proxy";
  std::string path = req.path.size() > prefix.size() ? req.path.substr(prefix.size()) : "";
  if (path.empty()) path = "/";
  std::string query;
  for (const auto& [key, value] : req.params) {
    query += (query.empty() ? "?" : "&") + httplib::detail::encode_query_param(key) + "=" +
             httplib::detail::encode_query_param(value);
  }
  httplib::Headers headers;
  for (const auto& [key, value] : req.headers) {
    if (Forwarded(key)) headers.emplace(key, value);
  }
  headers.emplace("X-Forwarded-For", req.remote_addr);

  httplib::Client backend(ip, port_number);
  backend.set_connection_timeout(5, 0);
  backend.set_read_timeout(60, 0);
  auto answer = backend.Get(path + query, headers);
  if (!answer) {
    return Reply(
        res, ApiError{503,
                      "ServiceUnavailable",
                      "error trying to reach service: dial tcp " + ip + ":" +
                          std::to_string(port_number) + ": " + httplib::to_string(answer.error()),
                      {}});
  }
  res.status = answer->status;
  res.set_content(answer->body, answer->get_header_value("Content-Type").empty()
                                    ? "text/plain"
                                    : answer->get_header_value("Content-Type"));
  if (answer->has_header("WWW-Authenticate")) {
    res.set_header("WWW-Authenticate", answer->get_header_value("WWW-Authenticate"));
  }
}

}  // namespace gputopo::testing

// FakeApiServer::Impl's authentication and authorization: the bearer token every request needs
// when one is set, and the TokenReview and SubjectAccessReview APIs that delegated auth uses.
#include <algorithm>

#include "test/support/fake_api_server/impl.h"

namespace gputopo::testing {

using fake_api::Find;
using fake_api::Str;

void FakeApiServer::Impl::SetBearerToken(std::string token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = std::move(token);
}

void FakeApiServer::Impl::AddTokenUser(std::string token, std::string user,
                                       std::vector<std::string> groups) {
  std::lock_guard<std::mutex> lock(mu_);
  token_users_[std::move(token)] = {std::move(user), std::move(groups)};
}

void FakeApiServer::Impl::AllowNonResource(std::string subject, std::string verb,
                                           std::string path) {
  std::lock_guard<std::mutex> lock(mu_);
  non_resource_rules_.emplace_back(std::move(subject), std::move(verb), std::move(path));
}

bool FakeApiServer::Impl::Authorized(const httplib::Request& req) const {
  std::string token;
  {
    std::lock_guard<std::mutex> lock(mu_);
    token = token_;
  }
  if (token.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  const size_t space = header.find(' ');
  if (space == std::string::npos || fake_api::ToLower(header.substr(0, space)) != "bearer") {
    return false;
  }
  return fake_api::Trim(std::string_view(header).substr(space + 1)) == token;
}

// POST /apis/authentication.k8s.io/v1/tokenreviews: the TokenReview with its status, 201.
void FakeApiServer::Impl::TokenReview(const httplib::Request& req, httplib::Response& res) {
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object() || Str(body, {"kind"}) != "TokenReview") {
    return Reply(res, fake_api::BadRequest("the object provided is unrecognized (must be of "
                                           "type TokenReview)"));
  }
  const std::string token = Str(body, {"spec", "token"});
  std::lock_guard<std::mutex> lock(mu_);
  auto it = token_users_.find(token);
  if (it == token_users_.end()) {
    body["status"] = {{"authenticated", false}, {"error", "invalid bearer token"}};
  } else {
    body["status"] = {{"authenticated", true},
                      {"user",
                       {{"username", it->second.first},
                        {"uid", "uid-" + it->second.first},
                        {"groups", it->second.second}}}};
  }
  Reply(res, 201, body);
}

// POST /apis/authorization.k8s.io/v1/subjectaccessreviews: nonResourceAttributes only, as RBAC's
// nonResourceURLs: an exact path, or a prefix ending in '*'; the user or one of its groups.
void FakeApiServer::Impl::SubjectAccessReview(const httplib::Request& req, httplib::Response& res) {
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object() || Str(body, {"kind"}) != "SubjectAccessReview") {
    return Reply(res, fake_api::BadRequest("the object provided is unrecognized (must be of "
                                           "type SubjectAccessReview)"));
  }
  const std::string user = Str(body, {"spec", "user"});
  const std::string verb = Str(body, {"spec", "nonResourceAttributes", "verb"});
  const std::string path = Str(body, {"spec", "nonResourceAttributes", "path"});
  std::vector<std::string> subjects{user};
  if (const json* groups = Find(body, {"spec", "groups"}); groups && groups->is_array()) {
    for (const json& g : *groups) {
      if (g.is_string()) subjects.push_back(g.get<std::string>());
    }
  }
  bool allowed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [subject, rule_verb, rule_path] : non_resource_rules_) {
      const bool path_ok = rule_path == path || (!rule_path.empty() && rule_path.back() == '*' &&
                                                 path.compare(0, rule_path.size() - 1, rule_path, 0,
                                                              rule_path.size() - 1) == 0);
      if (path_ok && rule_verb == verb &&
          std::find(subjects.begin(), subjects.end(), subject) != subjects.end()) {
        allowed = true;
      }
    }
  }
  body["status"] =
      allowed ? json{{"allowed", true}, {"reason", "RBAC: allowed"}} : json{{"allowed", false}};
  Reply(res, 201, body);
}

}  // namespace gputopo::testing

// FakeApiServer::Impl's collection GETs: the query options every list and watch shares (and
// those the fake rejects as not implemented), then lists with limit/continue pagination over a
// consistent snapshot and the resourceVersion rules of kube-apiserver.
#include <algorithm>

#include "test/support/fake_api_server/continue_token.h"
#include "test/support/fake_api_server/impl.h"

namespace gputopo::testing {
namespace {

using fake_api::ApiError;
using fake_api::BadRequest;

constexpr const char* kContinueExpiredMessage =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.";

// Query options a real server honours on lists and watches that gputopo never sends; the fake
// answers them 400 rather than ignore them.
constexpr const char* kNotImplementedOptions[] = {"labelSelector", "resourceVersionMatch",
                                                  "sendInitialEvents"};

std::string Rv(uint64_t resource_version) { return std::to_string(resource_version); }

}  // namespace

void FakeApiServer::Impl::CollectionGet(const httplib::Request& req, httplib::Response& res,
                                        Resource r, const std::string& namespace_name) {
  for (const char* option : kNotImplementedOptions) {
    if (req.has_param(option)) {
      return Reply(res, fake_api::NotImplemented(option, "gputopo never sends one"));
    }
  }
  fake_api::Filter filter;
  filter.namespace_name = namespace_name;
  if (std::optional<ApiError> error =
          fake_api::ParseFieldSelector(req.get_param_value("fieldSelector"), r, &filter)) {
    return Reply(res, *error);
  }
  bool watch = false;
  if (req.has_param("watch")) {
    std::optional<bool> value = fake_api::ParseBool(req.get_param_value("watch"));
    if (!value) {
      return Reply(res, BadRequest("strconv.ParseBool: parsing \"" + req.get_param_value("watch") +
                                   "\": invalid syntax"));
    }
    watch = *value;
  }
  if (watch) return Watch(req, res, r, std::move(filter));
  List(req, res, r, filter);
}

void FakeApiServer::Impl::List(const httplib::Request& req, httplib::Response& res, Resource r,
                               const fake_api::Filter& filter) {
  const std::string rv_param = req.get_param_value("resourceVersion");
  const std::string continue_param = req.get_param_value("continue");
  int64_t limit = 0;
  if (req.has_param("limit")) {
    std::optional<int64_t> value = fake_api::ParseInt(req.get_param_value("limit"));
    if (!value) return Reply(res, BadRequest("invalid limit: " + req.get_param_value("limit")));
    limit = std::max<int64_t>(*value, 0);
  }
  if (!continue_param.empty() && !rv_param.empty() && rv_param != "0") {
    return Reply(res, BadRequest("specifying resource version is not allowed when using continue"));
  }
  std::optional<uint64_t> min_rv;
  if (continue_param.empty() && !rv_param.empty() && rv_param != "0") {
    min_rv = fake_api::ParseUint(rv_param);
    if (!min_rv) return Reply(res, BadRequest("invalid resource version: " + rv_param));
  }
  std::optional<fake_api::ContinueToken> token;
  if (!continue_param.empty()) {
    token = fake_api::DecodeContinue(continue_param);
    if (!token) {
      return Reply(res, BadRequest("continue key is not valid: incorrect encoded start "
                                   "resourceVersion (version meta.k8s.io/v1)"));
    }
    if (token->resource_version < 0) {
      return Reply(
          res, fake_api::NotImplemented("continuing with the token of a 410 (an inconsistent list)",
                                        "gputopo starts a new list after a 410"));
    }
  }

  json body;
  {
    std::unique_lock<std::mutex> lock(mu_);
    std::shared_ptr<const Snapshot> snapshot;
    uint64_t list_rv = 0;
    std::string start;
    if (token) {
      start = token->start;
      list_rv = static_cast<uint64_t>(token->resource_version);
      auto it = snapshots_.find({Index(r), list_rv});
      if (it == snapshots_.end()) {
        ApiError error = fake_api::Expired(kContinueExpiredMessage);
        json status = fake_api::StatusJson(error);
        status["metadata"]["continue"] = fake_api::EncodeContinue(-1, start);
        lock.unlock();
        return Reply(res, error.code, status);
      }
      snapshot = it->second;
    } else {
      if (min_rv && *min_rv > resource_version_) {
        state_cv_.wait_for(lock, too_large_wait_,
                           [&] { return resource_version_ >= *min_rv || stopping_; });
        if (*min_rv > resource_version_) {
          ApiError error{
              504, "Timeout",
              "Too large resource version: " + Rv(*min_rv) + ", current: " + Rv(resource_version_),
              json{{"causes", json::array({json{{"reason", "ResourceVersionTooLarge"},
                                                {"message", "Too large resource version"}}})},
                   {"retryAfterSeconds", 1}}};
          lock.unlock();
          return Reply(res, error);
        }
      }
      snapshot = TakeSnapshot(r);
      list_rv = resource_version_;
      if (rv_param == "0") limit = 0;  // served from the watch cache, which ignores limit
    }

    json items = json::array();
    size_t remaining = 0;
    std::string last_key;
    auto it = std::lower_bound(snapshot->begin(), snapshot->end(), start,
                               [](const std::pair<std::string, fake_api::JsonPtr>& entry,
                                  const std::string& key) { return entry.first < key; });
    for (; it != snapshot->end(); ++it) {
      if (!filter.Matches(r, *it->second)) continue;
      if (limit > 0 && items.size() >= static_cast<size_t>(limit)) {
        ++remaining;
        continue;
      }
      items.push_back(fake_api::StripTypeMeta(*it->second));
      last_key = it->first;
    }
    body = {{"kind", fake_api::Info(r).list_kind},
            {"apiVersion", fake_api::Info(r).api_version},
            {"metadata", {{"resourceVersion", Rv(list_rv)}}},
            {"items", std::move(items)}};
    if (remaining > 0) {
      body["metadata"]["continue"] =
          fake_api::EncodeContinue(static_cast<int64_t>(list_rv), last_key + std::string(1, '\0'));
      if (!filter.has_selectors()) body["metadata"]["remainingItemCount"] = remaining;
      snapshots_[{Index(r), list_rv}] = snapshot;
      TrimSnapshots();
    }
  }
  Reply(res, 200, body);
}

}  // namespace gputopo::testing

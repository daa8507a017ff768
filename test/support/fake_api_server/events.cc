// FakeApiServer::Impl's Event creation (POST namespaces/{ns}/events): named from generateName
// or the given name, stored for FakeApiServer::Events(); never listed or watched.
#include "test/support/fake_api_server/impl.h"
#include "test/support/fake_api_server/request_body.h"

namespace gputopo::testing {

using fake_api::ApiError;
using fake_api::PodKey;

void FakeApiServer::Impl::CreateEvent(const httplib::Request& req, httplib::Response& res,
                                      const std::string& ns) {
  json event;
  if (std::optional<ApiError> error = fake_api::ParseCreateBody(req, "Event", &event)) {
    return Reply(res, *error);
  }
  const std::string body_ns = fake_api::Namespace(event);
  if (!body_ns.empty() && body_ns != ns) {
    return Reply(res, fake_api::BadRequest("the namespace of the provided object does not match "
                                           "the namespace sent on the request"));
  }
  std::string name = fake_api::Name(event);
  const std::string generate_name = fake_api::Str(event, {"metadata", "generateName"});
  if (name.empty() && generate_name.empty()) {
    return Reply(res, fake_api::Invalid("Event", "", "metadata.name", "FieldValueRequired",
                                        "Required value: name or generateName is required"));
  }
  event["kind"] = "Event";
  event["apiVersion"] = "v1";
  json& metadata = event["metadata"];
  metadata["namespace"] = ns;
  std::unique_lock<std::mutex> lock(mu_);
  if (name.empty()) {
    do {
      name = generate_name + RandomSuffix();
    } while (events_.count(PodKey(ns, name)) != 0);
  }
  const std::string key = PodKey(ns, name);
  if (events_.count(key) != 0) {
    lock.unlock();
    return Reply(res, ApiError{409, "AlreadyExists", "events \"" + name + "\" already exists",
                               json{{"name", name}, {"kind", "events"}}});
  }
  metadata["name"] = name;
  metadata["uid"] = NewUid();
  metadata["creationTimestamp"] = fake_api::Rfc3339(now_());
  BumpResourceVersion();
  metadata["resourceVersion"] = std::to_string(resource_version_);
  events_[key] = event;
  lock.unlock();
  Reply(res, 201, event);
}

}  // namespace gputopo::testing

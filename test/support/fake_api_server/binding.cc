// FakeApiServer::Impl's pods/binding: BindingREST's validation, its UID and resourceVersion
// preconditions and conflicts, then spec.nodeName, the Binding's annotations and PodScheduled.
#include "test/support/fake_api_server/impl.h"
#include "test/support/fake_api_server/request_body.h"

namespace gputopo::testing {
namespace {

std::string StorageInvalidObject(const std::string& namespace_name, const std::string& name,
                                 const std::string& message) {
  return "StorageError: invalid object, Code: 4, Key: /registry/pods/" + namespace_name + "/" +
         name + ", ResourceVersion: 0, AdditionalErrorMsg: " + message;
}

}  // namespace

using fake_api::ApiError;
using fake_api::Conflict;
using fake_api::Find;
using fake_api::JsonPtr;
using fake_api::ResourceVersionOf;
using fake_api::Str;

void FakeApiServer::Impl::Bind(const httplib::Request& req, httplib::Response& res,
                               const std::string& ns, const std::string& url_name) {
  json binding;
  if (std::optional<ApiError> error = fake_api::ParseCreateBody(req, "Binding", &binding)) {
    return Reply(res, *error);
  }
  const std::string name = fake_api::Name(binding);
  if (name != url_name) {
    return Reply(res, fake_api::BadRequest("name in URL does not match name in Binding object"));
  }
  const std::string body_ns = fake_api::Namespace(binding);
  if (!body_ns.empty() && body_ns != ns) {
    return Reply(res, fake_api::BadRequest("the namespace of the provided object does not match "
                                           "the namespace sent on the request"));
  }
  // ValidatePodBinding; the real handler returns these as a bare aggregate error (a 500).
  const std::string target_kind = Str(binding, {"target", "kind"});
  const std::string node = Str(binding, {"target", "name"});
  std::vector<std::string> errors;
  if (!target_kind.empty() && target_kind != "Node") {
    errors.push_back("target.kind: Unsupported value: \"" + target_kind +
                     "\": supported values: \"Node\", \"<empty>\"");
  }
  if (node.empty()) errors.push_back("target.name: Required value");
  if (!errors.empty()) {
    std::string message = errors.size() == 1 ? errors[0] : "[" + errors[0] + ", " + errors[1] + "]";
    return Reply(res, ApiError{500, "", message, {}});
  }

  std::unique_lock<std::mutex> lock(mu_);
  auto& pods = objects_[Index(Resource::kPods)];
  auto it = pods.find(fake_api::PodKey(ns, name));
  if (it == pods.end()) {
    lock.unlock();
    return Reply(res, fake_api::NotFound("pods", name));
  }
  const JsonPtr previous = it->second;
  const json& pod = *previous;
  std::optional<ApiError> error;
  const std::string want_uid = Str(binding, {"metadata", "uid"});
  const std::string want_rv = ResourceVersionOf(binding);
  const std::string pod_uid = Str(pod, {"metadata", "uid"});
  const std::string assigned = Str(pod, {"spec", "nodeName"});
  const json* deletion = Find(pod, {"metadata", "deletionTimestamp"});
  const json* gates = Find(pod, {"spec", "schedulingGates"});
  if (!want_uid.empty() && want_uid != pod_uid) {
    error = Conflict("pods", name,
                     StorageInvalidObject(ns, name,
                                          "Precondition failed: UID in precondition: " + want_uid +
                                              ", UID in object meta: " + pod_uid));
  } else if (!want_rv.empty() && want_rv != ResourceVersionOf(pod)) {
    error = Conflict(
        "pods", name,
        StorageInvalidObject(ns, name,
                             "Precondition failed: ResourceVersion in precondition: " + want_rv +
                                 ", ResourceVersion in object meta: " + ResourceVersionOf(pod)));
  } else if (deletion != nullptr && !deletion->is_null()) {
    error = Conflict("pods/binding", name,
                     "pod " + name + " is being deleted, cannot be assigned to a host");
  } else if (!assigned.empty()) {
    error = Conflict("pods/binding", name,
                     "pod " + name + " is already assigned to node \"" + assigned + "\"");
  } else if (gates != nullptr && gates->is_array() && !gates->empty()) {
    error = Conflict("pods/binding", name, "pod " + name + " has non-empty .spec.schedulingGates");
  }
  if (error) {
    lock.unlock();
    return Reply(res, *error);
  }
  json updated = pod;
  updated["spec"]["nodeName"] = node;
  if (const json* annotations = Find(binding, {"metadata", "annotations"});
      annotations != nullptr && annotations->is_object()) {
    json& target = updated["metadata"]["annotations"];
    if (!target.is_object()) target = json::object();
    for (const auto& [key, value] : annotations->items()) target[key] = value;
  }
  UpsertPodScheduled(updated);
  BumpResourceVersion();
  JsonPtr stored = Put(Resource::kPods, it->first, std::move(updated));
  Publish(Resource::kPods, fake_api::kModified, stored, previous);
  lock.unlock();
  Reply(res, 201,
        json{{"kind", "Status"},
             {"apiVersion", "v1"},
             {"metadata", json::object()},
             {"status", "Success"},
             {"code", 201}});
}

// podutil.UpdatePodCondition(PodScheduled=True): the transition time moves only on a change.
void FakeApiServer::Impl::UpsertPodScheduled(json& pod) {
  json& status = pod["status"];
  if (!status.is_object()) status = json::object();
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  json condition = {{"type", "PodScheduled"},
                    {"status", "True"},
                    {"lastProbeTime", nullptr},
                    {"lastTransitionTime", fake_api::Rfc3339(now_())}};
  for (json& existing : conditions) {
    if (Str(existing, {"type"}) != "PodScheduled") continue;
    if (Str(existing, {"status"}) == "True" && existing.contains("lastTransitionTime")) {
      condition["lastTransitionTime"] = existing["lastTransitionTime"];
    }
    existing = std::move(condition);
    return;
  }
  conditions.push_back(std::move(condition));
}

}  // namespace gputopo::testing

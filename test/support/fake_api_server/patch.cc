// FakeApiServer::Impl's PATCH of a pod or a node: JSON merge patch (RFC 7386) with the real
// server's optimistic-concurrency conflict, immutable-field and pod-spec rules.
#include "test/support/fake_api_server/impl.h"
#include "test/support/fake_api_server/request_body.h"

namespace gputopo::testing {
namespace {

constexpr const char* kOptimisticLockMessage =
    "the object has been modified; please apply your changes to the latest version and try "
    "again";
constexpr const char* kPodSpecForbidden =
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)";

}  // namespace

using fake_api::BadRequest;
using fake_api::Find;
using fake_api::JsonPtr;
using fake_api::Name;
using fake_api::Namespace;
using fake_api::ResourceVersionOf;
using fake_api::Str;

void FakeApiServer::Impl::PatchObject(const httplib::Request& req, httplib::Response& res,
                                      Resource r, const std::string& ns, const std::string& name) {
  const bool pod = r == Resource::kPods;
  const std::string plural = fake_api::Info(r).plural;
  const std::string kind = fake_api::Info(r).kind;
  const std::string media = fake_api::MediaType(req);
  if (media != "application/merge-patch+json") {
    const bool real_type = media == "application/json-patch+json" ||
                           media == "application/strategic-merge-patch+json" ||
                           media == "application/apply-patch+yaml";
    return Reply(res,
                 fake_api::UnsupportedMediaType(
                     real_type ? "FakeApiServer implements only application/merge-patch+json (" +
                                     media + " is accepted by a real kube-apiserver)"
                               : "the body of the request was in an unknown format - accepted "
                                 "media types include: application/json-patch+json, "
                                 "application/merge-patch+json, application/apply-patch+yaml, "
                                 "application/strategic-merge-patch+json"));
  }
  json patch = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (patch.is_discarded() || !patch.is_object()) {
    return Reply(res, BadRequest("Invalid JSON Patch"));
  }

  std::unique_lock<std::mutex> lock(mu_);
  auto& objects = objects_[Index(r)];
  auto it = objects.find(pod ? fake_api::PodKey(ns, name) : name);
  if (it == objects.end()) {
    lock.unlock();
    return Reply(res, fake_api::NotFound(plural, name));
  }
  const JsonPtr previous = it->second;
  const json& old = *previous;
  json patched = old;
  patched.merge_patch(patch);
  if (!patched.contains("metadata") || !patched["metadata"].is_object()) {
    lock.unlock();
    return Reply(res, BadRequest("metadata must be an object"));
  }
  // checkName / EnsureObjectNamespaceMatchesRequestNamespace.
  if (Name(patched) != name) {
    lock.unlock();
    return Reply(res, BadRequest("the name of the object (" + Name(patched) +
                                 ") does not match the name on the URL (" + name + ")"));
  }
  if (!pod) {
    // rest.BeforeUpdate clears the namespace of a cluster-scoped object.
    patched["metadata"].erase("namespace");
  } else if (Namespace(patched) != ns) {
    lock.unlock();
    return Reply(res, BadRequest("the namespace of the provided object does not match the "
                                 "namespace sent on the request"));
  }
  // Optimistic concurrency: the patched object carries the current RV unless the patch set one.
  const std::string patched_rv = ResourceVersionOf(patched);
  if (!patched_rv.empty() && patched_rv != ResourceVersionOf(old)) {
    lock.unlock();
    return Reply(res, fake_api::Conflict(plural, name, kOptimisticLockMessage));
  }
  // rest.BeforeUpdate and the pod or node update strategy (both keep the old status).
  const std::string old_uid = Str(old, {"metadata", "uid"});
  const std::string new_uid = Str(patched, {"metadata", "uid"});
  if (!new_uid.empty() && new_uid != old_uid) {
    lock.unlock();
    return Reply(res, fake_api::Invalid(kind, name, "metadata.uid", "FieldValueInvalid",
                                        "Invalid value: \"" + new_uid + "\": field is immutable"));
  }
  patched["kind"] = kind;
  patched["apiVersion"] = "v1";
  for (const char* field :
       {"uid", "creationTimestamp", "deletionTimestamp", "generation", "resourceVersion"}) {
    fake_api::Preserve(patched, old, "metadata", field);
  }
  if (old.contains("status")) {
    patched["status"] = old["status"];
  } else {
    patched.erase("status");
  }
  fake_api::DropEmptyMetadataFields(patched);
  // A pod's spec is immutable (but for fields gputopo never patches); a node's is not.
  const json* old_spec = Find(old, {"spec"});
  const json* new_spec = Find(patched, {"spec"});
  const bool spec_changed = (old_spec == nullptr) != (new_spec == nullptr) ||
                            (old_spec != nullptr && *old_spec != *new_spec);
  if (pod && spec_changed) {
    lock.unlock();
    return Reply(res,
                 fake_api::Invalid("Pod", name, "spec", "FieldValueForbidden", kPodSpecForbidden));
  }
  json old_normalized = old;
  fake_api::DropEmptyMetadataFields(old_normalized);
  if (patched == old_normalized) {
    lock.unlock();
    return Reply(res, 200, old);  // no change: nothing is written
  }
  BumpResourceVersion();
  JsonPtr stored = Put(r, it->first, std::move(patched));
  Publish(r, fake_api::kModified, stored, previous);
  lock.unlock();
  Reply(res, 200, *stored);
}

}  // namespace gputopo::testing

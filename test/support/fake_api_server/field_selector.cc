// fieldSelector parsing and matching for the fake API server's lists and watches.
#include "test/support/fake_api_server/field_selector.h"

#include <algorithm>
#include <utility>

namespace gputopo::testing::fake_api {
namespace {

// The value of an implemented field, or nullopt when the fake does not implement it for `r`.
std::optional<std::string> FieldValue(Resource r, const json& object, const std::string& field) {
  if (field == "metadata.name") return Name(object);
  if (Info(r).namespaced && field == "metadata.namespace") return Namespace(object);
  if (r != Resource::kPods) return std::nullopt;
  if (field == "spec.nodeName") return Str(object, {"spec", "nodeName"});
  return std::nullopt;
}

// Fields the real server selects on that the fake does not implement (pod and node
// strategies' ToSelectableFields, less the implemented ones).
bool RealServerSupports(Resource r, const std::string& field) {
  static constexpr const char* kPodFields[] = {
      "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork",
      "status.phase",       "status.podIP",       "status.nominatedNodeName"};
  if (r == Resource::kNodes) return field == "spec.unschedulable";
  if (r == Resource::kDisruptionBudgets) return false;
  return std::find(std::begin(kPodFields), std::end(kPodFields), field) != std::end(kPodFields);
}

}  // namespace

bool Filter::Matches(Resource r, const json& object) const {
  if (!namespace_name.empty() && Namespace(object) != namespace_name) return false;
  for (const FieldRequirement& requirement : fields) {
    const std::string value = FieldValue(r, object, requirement.field).value_or("");
    if ((value == requirement.value) != requirement.equals) return false;
  }
  return true;
}

std::optional<ApiError> ParseFieldSelector(std::string_view selector, Resource r, Filter* filter) {
  if (Trim(selector).empty()) return std::nullopt;
  size_t begin = 0;
  while (begin <= selector.size()) {
    size_t end = selector.find(',', begin);
    if (end == std::string_view::npos) end = selector.size();
    const std::string_view term = Trim(selector.substr(begin, end - begin));
    FieldRequirement requirement;
    size_t op = 0;
    if ((op = term.find("!=")) != std::string_view::npos) {
      requirement.equals = false;
      requirement.value = std::string(term.substr(op + 2));
    } else if ((op = term.find("==")) != std::string_view::npos) {
      requirement.value = std::string(term.substr(op + 2));
    } else if ((op = term.find('=')) != std::string_view::npos) {
      requirement.value = std::string(term.substr(op + 1));
    } else {
      return BadRequest("invalid selector: '" + std::string(selector) + "'; can't understand '" +
                        std::string(term) + "'");
    }
    requirement.field = std::string(Trim(term.substr(0, op)));
    if (!FieldValue(r, json::object(), requirement.field)) {
      if (RealServerSupports(r, requirement.field)) {
        return NotImplemented("fieldSelector on " + requirement.field,
                              "gputopo selects pods by spec.nodeName and nodes by metadata.name");
      }
      return BadRequest("field label not supported: " + requirement.field);
    }
    filter->fields.push_back(std::move(requirement));
    begin = end + 1;
  }
  return std::nullopt;
}

}  // namespace gputopo::testing::fake_api

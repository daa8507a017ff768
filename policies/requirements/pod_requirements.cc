#include "policies/requirements/pod_requirements.h"

#include <charconv>
#include <tuple>

#include "gputopo/excerpt.h"
#include "gputopo/well_known.h"

namespace gputopo::policies {
namespace {

// Go's strconv.ParseBool forms.
std::optional<bool> ParseBool(std::string_view v) {
  if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") return true;
  if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False") {
    return false;
  }
  return std::nullopt;
}

Status BadAnnotation(std::string_view key, std::string_view value, std::string_view expected) {
  return InvalidArgument("annotation " + std::string(key) + "='" + Excerpt(value) +
                         "' is invalid: expected " + std::string(expected));
}

constexpr size_t kMaxGroupLength = 253;

}  // namespace

int PodRequirements::ShareMilli(int replicas) const {
  if (exclusive) return kWholeGpuMilli;
  if (gpu_milli) return *gpu_milli;
  return kWholeGpuMilli / (replicas < 1 ? 1 : replicas);
}

std::pair<std::string, std::string> DefaultGroupOf(const PodInfo& pod) {
  const OwnerReference* owner = nullptr;
  for (const OwnerReference& ref : pod.owners) {
    if (ref.controller) {
      owner = &ref;
      break;
    }
  }
  if (owner == nullptr && !pod.owners.empty()) owner = &pod.owners.front();
  const std::string& ns = pod.namespace_name;
  if (owner == nullptr) return {ns + "/Pod/" + pod.name, "the pod alone (no owner)"};
  if (owner->kind == "ReplicaSet" && !pod.pod_template_hash.empty()) {
    const std::string suffix = "-" + pod.pod_template_hash;
    const std::string& rs = owner->name;
    if (rs.size() > suffix.size() &&
        rs.compare(rs.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const std::string deployment = rs.substr(0, rs.size() - suffix.size());
      return {ns + "/Deployment/" + deployment,
              "Deployment " + deployment + " (via ReplicaSet " + rs + ")"};
    }
  }
  return {ns + "/" + owner->kind + "/" + owner->name, owner->kind + " " + owner->name};
}

Result<PodRequirements> RequirementsOf(const PodInfo& pod) {
  PodRequirements req;
  if (pod.gpu_request == kGpuRequestOverflow) {
    return InvalidArgument(std::string(kGpuResource) + " request is out of range 0.." +
                           std::to_string(kMaxGpuRequest) +
                           ": the containers' requests add up to more than " +
                           std::to_string(kGpuRequestOverflow));
  }
  if (pod.gpu_request < 0 || pod.gpu_request > kMaxGpuRequest) {
    return InvalidArgument(std::string(kGpuResource) + " request " +
                           std::to_string(pod.gpu_request) + " is out of range 0.." +
                           std::to_string(kMaxGpuRequest));
  }
  req.gpus = static_cast<int>(pod.gpu_request);
  if (pod.cpu_request_milli == kGpuRequestOverflow || pod.cpu_request_milli < 0 ||
      pod.memory_request_bytes == kGpuRequestOverflow || pod.memory_request_bytes < 0) {
    return InvalidArgument(
        "cpu or memory request is out of range: the containers' requests add "
        "up to more than " +
        std::to_string(kGpuRequestOverflow));
  }
  req.cpu_milli = pod.cpu_request_milli;
  req.memory_bytes = pod.memory_request_bytes;
  req.locality = req.gpus > 1 ? Locality::kNvLink : Locality::kNone;

  if (auto v = FindAnnotation(pod.annotations, kAnnotationSpread)) {
    const std::optional<SpreadMode> spread = ValueOf(kSpreadModeNames, *v);
    if (!spread) return BadAnnotation(kAnnotationSpread, *v, NameList(kSpreadModeNames));
    req.spread = *spread;
  }
  if (auto v = FindAnnotation(pod.annotations, kAnnotationLocality)) {
    const std::optional<Locality> locality = ValueOf(kLocalityNames, *v);
    if (!locality) return BadAnnotation(kAnnotationLocality, *v, NameList(kLocalityNames));
    req.locality = *locality;
  }
  if (auto v = FindAnnotation(pod.annotations, kAnnotationLocalityMode)) {
    const std::optional<ConstraintMode> mode = ValueOf(kConstraintModeNames, *v);
    if (!mode) return BadAnnotation(kAnnotationLocalityMode, *v, NameList(kConstraintModeNames));
    req.locality_mode = *mode;
  }
  if (auto v = FindAnnotation(pod.annotations, kAnnotationExclusive)) {
    std::optional<bool> b = ParseBool(*v);
    if (!b) return BadAnnotation(kAnnotationExclusive, *v, "true or false");
    req.exclusive = *b;
  }
  if (auto v = FindAnnotation(pod.annotations, kAnnotationGpuMilli)) {
    int milli = 0;
    auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), milli);
    if (ec != std::errc() || ptr != v->data() + v->size() || milli < 1 || milli > kWholeGpuMilli) {
      return BadAnnotation(kAnnotationGpuMilli, *v, "an integer in 1..1000");
    }
    req.gpu_milli = milli;
  }
  if (auto v = FindAnnotation(pod.annotations, kAnnotationPolicy)) {
    if (v->empty()) return BadAnnotation(kAnnotationPolicy, *v, "a preset name");
    req.policy = std::string(*v);
  }
  if (auto v = FindAnnotation(pod.annotations, kAnnotationGroup)) {
    if (v->empty() || v->size() > kMaxGroupLength) {
      return BadAnnotation(kAnnotationGroup, *v, "a name of 1..253 characters");
    }
    req.group = pod.namespace_name + "/" + std::string(*v);
    req.group_source = "annotation " + std::string(kAnnotationGroup);
  } else {
    std::tie(req.group, req.group_source) = DefaultGroupOf(pod);
  }
  return req;
}

}  // namespace gputopo::policies

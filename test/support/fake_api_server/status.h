// Errors of the fake API server as kube-apiserver renders them: metav1.Status bodies with the
// reason, message and details that k8s.io/apimachinery/pkg/api/errors produces, and the
// fake's own "not implemented" answer for what it deliberately does not serve.
//
// Pure functions; thread-safe.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_STATUS_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_STATUS_H_

#include <string>

#include "test/support/fake_api_server/wire.h"

namespace gputopo::testing::fake_api {

struct ApiError {
  int code = 500;
  std::string reason;  // empty: omitted (StatusReasonUnknown)
  std::string message;
  json details;  // null: omitted
};

// {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",...,"code"}.
json StatusJson(const ApiError& error);
// The StatusReason the real server pairs with an HTTP status ("" for codes it has none for).
std::string ReasonForCode(int code);

ApiError BadRequest(std::string message);
// "<plural> \"<name>\" not found", details {name, kind: plural}.
ApiError NotFound(const std::string& plural, const std::string& name);
// An unknown URL path.
ApiError NoSuchPath();
// A known path with a method it does not serve.
ApiError MethodNotAllowed();
// "Operation cannot be fulfilled on <qualified_resource> \"<name>\": <why>".
ApiError Conflict(const std::string& qualified_resource, const std::string& name,
                  const std::string& why);
ApiError Expired(std::string message);
// One field error, as errors.NewInvalid renders it.
ApiError Invalid(const std::string& kind, const std::string& name, const std::string& field,
                 const std::string& cause_reason, const std::string& cause_message);
ApiError UnsupportedMediaType(std::string message);
// A 400 for what a real server serves but this fake deliberately does not, because gputopo never
// sends it: "fake API server: <what> is not implemented (<why>)". Never a silent success.
ApiError NotImplemented(const std::string& what, const std::string& why);

}  // namespace gputopo::testing::fake_api

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_STATUS_H_

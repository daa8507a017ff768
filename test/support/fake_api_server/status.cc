// metav1.Status bodies and reason phrases of the fake API server.
#include "test/support/fake_api_server/status.h"

#include <utility>

namespace gputopo::testing::fake_api {

json StatusJson(const ApiError& error) {
  json status = {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"metadata", json::object()},
                 {"status", "Failure"}};
  if (!error.message.empty()) status["message"] = error.message;
  if (!error.reason.empty()) status["reason"] = error.reason;
  if (!error.details.is_null()) status["details"] = error.details;
  status["code"] = error.code;
  return status;
}

std::string ReasonForCode(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

ApiError BadRequest(std::string message) { return {400, "BadRequest", std::move(message), {}}; }

ApiError NotFound(const std::string& plural, const std::string& name) {
  return {404, "NotFound", plural + " \"" + name + "\" not found",
          json{{"name", name}, {"kind", plural}}};
}

ApiError NoSuchPath() {
  return {404, "NotFound", "the server could not find the requested resource", json::object()};
}

ApiError MethodNotAllowed() {
  return {405, "MethodNotAllowed",
          "the server does not allow this method on the requested resource", json::object()};
}

ApiError Conflict(const std::string& qualified_resource, const std::string& name,
                  const std::string& why) {
  return {409, "Conflict",
          "Operation cannot be fulfilled on " + qualified_resource + " \"" + name + "\": " + why,
          json{{"name", name}, {"kind", qualified_resource}}};
}

ApiError Expired(std::string message) { return {410, "Expired", std::move(message), {}}; }

ApiError Invalid(const std::string& kind, const std::string& name, const std::string& field,
                 const std::string& cause_reason, const std::string& cause_message) {
  json cause = {{"reason", cause_reason}, {"message", cause_message}, {"field", field}};
  return {422, "Invalid", kind + " \"" + name + "\" is invalid: " + field + ": " + cause_message,
          json{{"name", name}, {"kind", kind}, {"causes", json::array({cause})}}};
}

ApiError UnsupportedMediaType(std::string message) {
  return {415, "UnsupportedMediaType", std::move(message), {}};
}

ApiError NotImplemented(const std::string& what, const std::string& why) {
  return BadRequest("fake API server: " + what + " is not implemented (" + why + ")");
}

}  // namespace gputopo::testing::fake_api

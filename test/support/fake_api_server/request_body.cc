// Request-body decoding of the fake API server (media types, create-style JSON bodies).
#include "test/support/fake_api_server/request_body.h"

namespace gputopo::testing::fake_api {

std::string MediaType(const httplib::Request& req) {
  std::string value = req.get_header_value("Content-Type");
  const size_t semicolon = value.find(';');
  if (semicolon != std::string::npos) value.resize(semicolon);
  return ToLower(Trim(value));
}

std::optional<ApiError> ParseCreateBody(const httplib::Request& req, const std::string& kind,
                                        json* out) {
  const std::string media = MediaType(req);
  if (!media.empty() && media != "application/json") {
    return UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf "
        "(FakeApiServer: JSON only)");
  }
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  const std::string unrecognized =
      "the object provided is unrecognized (must be of type " + kind + "): ";
  if (body.is_discarded() || !body.is_object()) {
    return BadRequest(unrecognized + "couldn't get version/kind; json parse error");
  }
  const std::string body_kind = Str(body, {"kind"});
  if (!body_kind.empty() && body_kind != kind) {
    return BadRequest(unrecognized + "no kind \"" + body_kind +
                      "\" is registered for this endpoint");
  }
  const std::string api_version = Str(body, {"apiVersion"});
  if (!api_version.empty() && api_version != "v1") {
    return BadRequest(unrecognized + "apiVersion \"" + api_version + "\" is not v1");
  }
  if (body.contains("metadata") && !body["metadata"].is_object()) {
    return BadRequest(unrecognized + "metadata must be an object");
  }
  *out = std::move(body);
  return std::nullopt;
}

}  // namespace gputopo::testing::fake_api

// Request bodies of the fake API server: the Content-Type's media type and the decoding of a
// create-style JSON body (Binding, Event) with the real server's 400/415 answers.
//
// Pure functions; thread-safe.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_REQUEST_BODY_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_REQUEST_BODY_H_

#include <httplib.h>

#include <optional>
#include <string>

#include "test/support/fake_api_server/status.h"
#include "test/support/fake_api_server/wire.h"

namespace gputopo::testing::fake_api {

// The Content-Type's media type, lower-cased, without parameters.
std::string MediaType(const httplib::Request& req);

// Decodes a JSON object body whose kind (when set) is `kind` and apiVersion (when set) v1 into
// `out`. On error, the Status to answer (415 for a non-JSON media type, 400 otherwise).
std::optional<ApiError> ParseCreateBody(const httplib::Request& req, const std::string& kind,
                                        json* out);

}  // namespace gputopo::testing::fake_api

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_REQUEST_BODY_H_

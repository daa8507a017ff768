// List continue tokens (base64url JSON), as kube-apiserver's storage layer writes them.
#include "test/support/fake_api_server/continue_token.h"

#include "test/support/fake_api_server/wire.h"

namespace gputopo::testing::fake_api {
namespace {

std::string Base64UrlEncode(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : in) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(buffer >> bits) & 63u];
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (6 - bits)) & 63u];
  return out;
}

// Accepts the standard alphabet and padding too, as Go's decoder of the token does.
std::optional<std::string> Base64UrlDecode(std::string_view in) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : in) {
    uint32_t v = 0;
    if (c >= 'A' && c <= 'Z') {
      v = static_cast<uint32_t>(c - 'A');
    } else if (c >= 'a' && c <= 'z') {
      v = static_cast<uint32_t>(c - 'a' + 26);
    } else if (c >= '0' && c <= '9') {
      v = static_cast<uint32_t>(c - '0' + 52);
    } else if (c == '-' || c == '+') {
      v = 62;
    } else if (c == '_' || c == '/') {
      v = 63;
    } else if (c == '=') {
      break;
    } else {
      return std::nullopt;
    }
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFFu);
    }
  }
  return out;
}

}  // namespace

std::string EncodeContinue(int64_t resource_version, const std::string& start) {
  return Base64UrlEncode(
      Dump(json{{"v", "meta.k8s.io/v1"}, {"rv", resource_version}, {"start", start}}));
}

std::optional<ContinueToken> DecodeContinue(std::string_view token) {
  std::optional<std::string> raw = Base64UrlDecode(token);
  if (!raw) return std::nullopt;
  json j = json::parse(*raw, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || Str(j, {"v"}) != "meta.k8s.io/v1") return std::nullopt;
  const json* rv = Find(j, {"rv"});
  const json* start = Find(j, {"start"});
  if (rv == nullptr || !rv->is_number_integer() || start == nullptr || !start->is_string()) {
    return std::nullopt;
  }
  return ContinueToken{rv->get<int64_t>(), start->get<std::string>()};
}

}  // namespace gputopo::testing::fake_api

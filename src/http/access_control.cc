#include "src/http/access_control.h"

#include <openssl/evp.h>

#include <cctype>

namespace gputopo::http {
namespace {

// The SHA-256 of `token`, in hex: cache keys that do not keep the token.
std::string HashOf(std::string_view token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), digest, &size, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xF]);
  }
  return out;
}

// The token of "Bearer <token>" (the scheme is case-insensitive); empty when there is none.
std::string_view BearerToken(std::string_view header) {
  const size_t space = header.find(' ');
  if (space != 6) return {};
  for (size_t i = 0; i < 6; ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != "bearer"[i]) return {};
  }
  std::string_view token = header.substr(space + 1);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  return token;
}

}  // namespace

int AccessControl::Decision::http_status() const {
  switch (verdict) {
    case Verdict::kAllowed:
      return 200;
    case Verdict::kUnauthenticated:
      return 401;
    case Verdict::kForbidden:
      return 403;
    case Verdict::kUnavailable:
      break;
  }
  return 503;
}

AccessControl::AccessControl(AccessReviewer& reviewer, const Clock& clock, Options options)
    : reviewer_(reviewer), clock_(clock), options_(options) {}

AccessControl::Decision AccessControl::Check(std::string_view authorization,
                                             std::string_view path) {
  const std::string_view token = BearerToken(authorization);
  if (token.empty()) return {Verdict::kUnauthenticated, "a bearer token is required"};
  const std::string hash = HashOf(token);
  const std::string access_key = hash + " " + std::string(path);
  const auto now = clock_.MonotonicNow();

  std::optional<ReviewedUser> user;
  bool user_known = false;
  {
    MutexLock lock(mutex_);
    if (auto it = accesses_.find(access_key); it != accesses_.end() && it->second.expires > now) {
      if (it->second.allowed) return {Verdict::kAllowed, ""};
      return {Verdict::kForbidden, "RBAC does not allow get on " + std::string(path)};
    }
    if (auto it = users_.find(hash); it != users_.end() && it->second.expires > now) {
      user = it->second.user;
      user_known = true;
    }
  }
  if (!user_known) {
    Result<std::optional<ReviewedUser>> reviewed = reviewer_.ReviewToken(token);
    if (!reviewed.ok()) {
      return {Verdict::kUnavailable, "TokenReview failed: " + reviewed.status().message()};
    }
    user = *reviewed;
    MutexLock lock(mutex_);
    if (users_.size() >= options_.max_entries) users_.clear();
    users_[hash] = {user, now + options_.authn_ttl};
  }
  if (!user) return {Verdict::kUnauthenticated, "the token is not valid"};

  Result<bool> allowed = reviewer_.ReviewAccess(*user, "get", path);
  if (!allowed.ok()) {
    return {Verdict::kUnavailable, "SubjectAccessReview failed: " + allowed.status().message()};
  }
  {
    MutexLock lock(mutex_);
    if (accesses_.size() >= options_.max_entries) accesses_.clear();
    accesses_[access_key] = {*allowed, now + (*allowed ? options_.allow_ttl : options_.deny_ttl)};
  }
  if (*allowed) return {Verdict::kAllowed, ""};
  return {Verdict::kForbidden,
          "user " + user->username + " may not get " + std::string(path) + " (RBAC)"};
}

}  // namespace gputopo::http

#include "src/codec/quantity.h"

#include <cmath>
#include <string>

namespace gputopo::codec {
namespace {

constexpr long double kLimitMilli = static_cast<long double>(kMaxQuantityMilli);

// Multiplier of a suffix, or 0 when the suffix is not one Kubernetes knows.
long double SuffixMultiplier(std::string_view suffix) {
  if (suffix.empty()) return 1.0L;
  if (suffix == "m") return 1e-3L;
  if (suffix == "k") return 1e3L;
  if (suffix == "M") return 1e6L;
  if (suffix == "G") return 1e9L;
  if (suffix == "T") return 1e12L;
  if (suffix == "P") return 1e15L;
  if (suffix == "E") return 1e18L;
  if (suffix == "Ki") return 1024.0L;
  if (suffix == "Mi") return 1048576.0L;
  if (suffix == "Gi") return 1073741824.0L;
  if (suffix == "Ti") return 1099511627776.0L;
  if (suffix == "Pi") return 1125899906842624.0L;
  if (suffix == "Ei") return 1152921504606846976.0L;
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    // Decimal exponent: e3, E-2.
    size_t i = 1;
    bool negative = false;
    if (suffix[i] == '+' || suffix[i] == '-') negative = suffix[i++] == '-';
    if (i >= suffix.size() || suffix.size() - i > 3) return 0.0L;
    int exponent = 0;
    for (; i < suffix.size(); ++i) {
      if (suffix[i] < '0' || suffix[i] > '9') return 0.0L;
      exponent = exponent * 10 + (suffix[i] - '0');
    }
    return std::pow(10.0L, negative ? -exponent : exponent);
  }
  return 0.0L;
}

}  // namespace

Result<int64_t> ParseQuantityMilli(std::string_view text) {
  const std::string shown(text.substr(0, 64));
  if (text.empty() || text.size() > 64) return InvalidArgument("invalid quantity '" + shown + "'");
  size_t i = 0;
  bool negative = false;
  if (text[i] == '+' || text[i] == '-') negative = text[i++] == '-';
  long double value = 0.0L;
  long double scale = 1.0L;
  bool digits = false;
  bool point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      digits = true;
      if (point) {
        scale /= 10.0L;
        value += (c - '0') * scale;
      } else {
        value = value * 10.0L + (c - '0');
      }
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!digits) return InvalidArgument("invalid quantity '" + shown + "'");
  const long double multiplier = SuffixMultiplier(text.substr(i));
  if (multiplier == 0.0L) return InvalidArgument("invalid quantity '" + shown + "'");
  long double milli = value * multiplier * 1000.0L;
  // Written so that a NaN (0 times an infinite multiplier where long double is only a double)
  // is rejected too, before the cast to int64_t below could see it.
  if (!(milli <= kLimitMilli)) return InvalidArgument("quantity '" + shown + "' is too large");
  // Kubernetes rounds up to the nearest milli.
  milli = std::ceil(milli - 1e-9L);
  return static_cast<int64_t>(negative ? -milli : milli);
}

Result<int64_t> ParseWholeQuantity(std::string_view text) {
  Result<int64_t> milli = ParseQuantityMilli(text);
  if (!milli.ok()) return milli;
  if (*milli % 1000 != 0) {
    return InvalidArgument("quantity '" + std::string(text) + "' must be a whole number");
  }
  return *milli / 1000;
}

}  // namespace gputopo::codec

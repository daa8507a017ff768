// Kubernetes resource quantities ("1", "500m", "2Ki", "1e3", "1.5G").
//
// Thread safety: pure functions.
#ifndef GPUTOPO_SRC_CODEC_QUANTITY_H_
#define GPUTOPO_SRC_CODEC_QUANTITY_H_

#include <cstdint>
#include <string_view>

#include "gputopo/status.h"

namespace gputopo::codec {

// The largest magnitude a quantity may have, in units (9.2e15) and in thousandths (9.2e18, just
// under INT64_MAX). A sum of up to 1002 such values still fits in int64_t.
inline constexpr int64_t kMaxQuantityUnits = 9'200'000'000'000'000;
inline constexpr int64_t kMaxQuantityMilli = kMaxQuantityUnits * 1000;

// The quantity in thousandths of a unit ("1" -> 1000, "250m" -> 250). Error for text that is
// not a quantity, or a value beyond +-kMaxQuantityUnits ("9223372036854775807", "1e30",
// "99999999999999999999Ei" are all errors, never a wrapped or clamped number).
Result<int64_t> ParseQuantityMilli(std::string_view text);

// A quantity that must be a whole count (extended resources such as nvidia.com/gpu).
Result<int64_t> ParseWholeQuantity(std::string_view text);

}  // namespace gputopo::codec

#endif  // GPUTOPO_SRC_CODEC_QUANTITY_H_

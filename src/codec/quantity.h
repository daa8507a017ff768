// Kubernetes resource quantities ("1", "500m", "2Ki", "1e3", "1.5G").
//
// Thread safety: pure functions.
#ifndef GPUTOPO_SRC_CODEC_QUANTITY_H_
#define GPUTOPO_SRC_CODEC_QUANTITY_H_

#include <cstdint>
#include <string_view>

#include "gputopo/status.h"

namespace gputopo::codec {

// The quantity in thousandths of a unit ("1" -> 1000, "250m" -> 250). Error for text that is
// not a quantity, or a value beyond +-9.2e15 units.
Result<int64_t> ParseQuantityMilli(std::string_view text);

// A quantity that must be a whole count (extended resources such as nvidia.com/gpu).
Result<int64_t> ParseWholeQuantity(std::string_view text);

}  // namespace gputopo::codec

#endif  // GPUTOPO_SRC_CODEC_QUANTITY_H_

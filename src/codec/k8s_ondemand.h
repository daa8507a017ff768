// Internal: decoding Pod and Node values in the middle of a larger simdjson On-Demand document
// (an extender request carries its Pod inline). Include only from .cc files: simdjson.h is
// large.
//
// Functions throw simdjson::simdjson_error on malformed JSON; callers catch it at the adapter
// boundary and turn it into a Status.
#ifndef GPUTOPO_SRC_CODEC_K8S_ONDEMAND_H_
#define GPUTOPO_SRC_CODEC_K8S_ONDEMAND_H_

#include <simdjson.h>

#include <string_view>

#include "gputopo/node_info.h"
#include "gputopo/pod_info.h"
#include "gputopo/status.h"

namespace gputopo::codec {

// `with_labels`: also read metadata.labels into PodInfo::labels. The extender's request bodies
// leave them out (nothing on the request path reads them); the API server watch keeps them.
Result<PodInfo> DecodePodValue(simdjson::ondemand::value pod, bool with_labels = false);
Result<NodeInfo> DecodeNodeValue(simdjson::ondemand::value node);

// True when nothing but whitespace follows what has been read of `doc` (simdjson's On-Demand
// API does not reject trailing content by itself).
inline bool AtEnd(simdjson::ondemand::document& doc) {
  return doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

// ASCII case-insensitive equality, as Go's encoding/json matches field names.
bool KeyEquals(std::string_view key, std::string_view expected);

}  // namespace gputopo::codec

#endif  // GPUTOPO_SRC_CODEC_K8S_ONDEMAND_H_

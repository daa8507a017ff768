// Preset files (policies/presets/*.json): JSON -> PresetSpec.
//
//   {"name": "default", "description": "...",
//    "components": [
//      {"name": "replica-spread", "weight": 4, "args": {"islandPenalty": 0.25}},
//      {"name": "fragmentation", "weight": 2,
//       "workload": [{"gpus": 1, "milli": 500, "weight": 0.3}, ...]}]}
//
// Thread safety: pure functions.
#ifndef GPUTOPO_SRC_CODEC_PRESET_DOCUMENT_H_
#define GPUTOPO_SRC_CODEC_PRESET_DOCUMENT_H_

#include <string_view>

#include "gputopo/status.h"
#include "policies/registry/component_args.h"

namespace gputopo::codec {

Result<policies::PresetSpec> ParsePresetDocument(std::string_view json);

}  // namespace gputopo::codec

#endif  // GPUTOPO_SRC_CODEC_PRESET_DOCUMENT_H_

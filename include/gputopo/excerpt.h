// Excerpt: what of an input gputopo echoes back, in log lines and in Error fields (which
// kube-scheduler copies into pod conditions and Events). A name or value from the network can be
// megabytes long; an excerpt is at most `max_bytes` of it (cut at a UTF-8 character boundary)
// followed by "...(N bytes)", so a reader still learns its full length.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_EXCERPT_H_
#define GPUTOPO_EXCERPT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace gputopo {

// Input echoed into a message: a few hundred bytes.
inline constexpr size_t kMaxEchoBytes = 256;
// A whole message built from such input (an Error field, say).
inline constexpr size_t kMaxMessageBytes = 1024;

inline std::string Excerpt(std::string_view text, size_t max_bytes = kMaxEchoBytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  // Back up over UTF-8 continuation bytes (10xxxxxx) so that no character is split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...(" + std::to_string(text.size()) + " bytes)";
}

}  // namespace gputopo

#endif  // GPUTOPO_EXCERPT_H_

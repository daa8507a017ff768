// Which objects a list or a watch returns: the namespace of the URL and the fieldSelector.
//
// Implemented: metadata.name (nodes and pods), metadata.namespace and spec.nodeName (pods), with
// the operators =, == and !=, terms joined by ','. gputopo selects pods by spec.nodeName and
// nodes by metadata.name, nothing else. A field the real server supports but this fake does not
// is answered with the fake's 400 "not implemented"; a field the real server does not support
// either gets the real 400 "field label not supported: <field>".
//
// Pure functions; a Filter is immutable once parsed and safe to share between threads.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_FIELD_SELECTOR_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_FIELD_SELECTOR_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "test/support/fake_api_server/resource.h"
#include "test/support/fake_api_server/status.h"
#include "test/support/fake_api_server/wire.h"

namespace gputopo::testing::fake_api {

struct FieldRequirement {
  std::string field;   // one of the implemented fields
  bool equals = true;  // false for !=
  std::string value;
};

struct Filter {
  std::string namespace_name;  // empty: all namespaces
  std::vector<FieldRequirement> fields;

  // metadata.remainingItemCount is reported only for lists without a selector.
  bool has_selectors() const { return !fields.empty(); }
  bool Matches(Resource r, const json& object) const;
};

// Adds the terms of `selector` (a fieldSelector query value; blank: none) to filter->fields.
// On error, the 400 to answer, and `filter` is partly filled.
std::optional<ApiError> ParseFieldSelector(std::string_view selector, Resource r, Filter* filter);

}  // namespace gputopo::testing::fake_api

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_FIELD_SELECTOR_H_

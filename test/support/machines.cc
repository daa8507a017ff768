#include "test/support/machines.h"

#include "topology/link_type.h"

namespace gputopo::testing {
namespace {
Link L(std::string_view text) { return *topology::ParseLink(text); }
}  // namespace

MachineTopology Dgx1() {
  const char* rows[8][8] = {{"X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"},
                            {"NV1", "X", "NV2", "NV1", "SYS", "NV2", "SYS", "SYS"},
                            {"NV1", "NV2", "X", "NV2", "SYS", "SYS", "NV1", "SYS"},
                            {"NV2", "NV1", "NV2", "X", "SYS", "SYS", "SYS", "NV1"},
                            {"NV2", "SYS", "SYS", "SYS", "X", "NV1", "NV1", "NV2"},
                            {"SYS", "NV2", "SYS", "SYS", "NV1", "X", "NV2", "NV1"},
                            {"SYS", "SYS", "NV1", "SYS", "NV1", "NV2", "X", "NV2"},
                            {"SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"}};
  MachineTopology m(8);
  for (int a = 0; a < 8; ++a) {
    m.gpu(a).numa_node = a < 4 ? 0 : 1;
    m.gpu(a).model = "Tesla V100-SXM2-32GB";
    for (int b = a + 1; b < 8; ++b) m.SetLink(a, b, L(rows[a][b]));
  }
  return m;
}

MachineTopology HgxH100() {
  MachineTopology m(8);
  for (int a = 0; a < 8; ++a) {
    m.gpu(a).numa_node = a < 4 ? 0 : 1;
    m.gpu(a).uuid = "GPU-h100-" + std::to_string(a);
    for (int b = a + 1; b < 8; ++b) m.SetLink(a, b, L("NV18"));
  }
  return m;
}

MachineTopology PcieTwoNuma(int gpus) {
  MachineTopology m(gpus);
  for (int a = 0; a < gpus; ++a) {
    m.gpu(a).numa_node = a < gpus / 2 ? 0 : 1;
    for (int b = a + 1; b < gpus; ++b) {
      m.SetLink(a, b, (a < gpus / 2) == (b < gpus / 2) ? L("NODE") : L("SYS"));
    }
  }
  return m;
}

MachineTopology NvLinkPairs() {
  MachineTopology m(8);
  for (int a = 0; a < 8; ++a) {
    m.gpu(a).numa_node = a / 4;
    for (int b = a + 1; b < 8; ++b) {
      Link link = a / 4 == b / 4 ? L("NODE") : L("SYS");
      if (a / 2 == b / 2) link = L("NV4");
      m.SetLink(a, b, link);
    }
  }
  return m;
}

}  // namespace gputopo::testing

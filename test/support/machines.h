// Machine topologies used across tests, built in code so that each test states what it relies
// on. Real captures are parsed in topology/nvidia_smi_parser_test.cc.
#ifndef GPUTOPO_TEST_SUPPORT_MACHINES_H_
#define GPUTOPO_TEST_SUPPORT_MACHINES_H_

#include "gputopo/machine_topology.h"

namespace gputopo::testing {

// DGX-1 V100 hybrid cube-mesh (NV1/NV2, SYS across), GPUs 0-3 on NUMA 0, 4-7 on NUMA 1.
MachineTopology Dgx1();
// HGX H100: 8 GPUs, NV18 all-to-all, GPUs 0-3 on NUMA 0, 4-7 on NUMA 1.
MachineTopology HgxH100();
// `gpus` PCIe GPUs over two NUMA nodes (first half on 0): NODE within, SYS across.
MachineTopology PcieTwoNuma(int gpus);
// 8 GPUs as 4 NVLink pairs (NV4), NODE within a NUMA node, SYS across.
MachineTopology NvLinkPairs();

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SUPPORT_MACHINES_H_

#include "topology/nvidia_smi_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "test/support/fixtures.h"
#include "topology/link_type.h"
#include "topology/topology_shape.h"

namespace gputopo::topology {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// What the parser says when it makes NUMA ids up from CPU Affinity.
constexpr char kDerivedNumaNote[] = "NUMA node ids are derived from CPU Affinity";
// What it says of a legend without an NV# line.
constexpr char kPcieOnlyNote[] = "looks like `nvidia-smi topo -mp` output";

std::filesystem::path CaptureDir() { return gputopo::testing::SharedDir() / "topology/nvidia-smi"; }

Result<NvidiaSmiTopology> ParseCapture(const std::string& file) {
  return ParseNvidiaSmiTopo(gputopo::testing::ReadFile(CaptureDir() / file));
}

// "NV2", "SYS", ... or "UNKNOWN": readable in failure messages.
std::string LinkText(const MachineTopology& machine, int a, int b) {
  return FormatLink(machine.link(a, b));
}

std::vector<int> NumaNodes(const MachineTopology& machine) {
  std::vector<int> ids;
  for (const GpuInfo& gpu : machine.gpus()) ids.push_back(gpu.numa_node);
  return ids;
}

int KnownPairs(const MachineTopology& machine) {
  int known = 0;
  for (int a = 0; a < machine.gpu_count(); ++a) {
    for (int b = a + 1; b < machine.gpu_count(); ++b) {
      known += machine.link(a, b).type != LinkType::kUnknown ? 1 : 0;
    }
  }
  return known;
}

bool IsPrintableAscii(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x20 && byte < 0x7f;
  });
}

// --- Every capture in shared/topology/nvidia-smi, fact by fact. ---

struct PairLink {
  int a;
  int b;
  std::string link;  // FormatLink() text
};

struct CaptureCase {
  std::string file;
  int gpu_count;
  std::vector<int> numa;
  std::vector<std::string> nics;
  std::vector<PairLink> links;
  int known_pairs;  // of gpu_count * (gpu_count - 1) / 2
  int diagnostics;  // how many
  std::string gpu0_cpu_affinity;
};

class CaptureTest : public ::testing::TestWithParam<CaptureCase> {};

TEST_P(CaptureTest, ReadsLinksNumaAndNics) {
  const CaptureCase& c = GetParam();
  Result<NvidiaSmiTopology> parsed = ParseCapture(c.file);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const MachineTopology& machine = parsed->machine;
  ASSERT_EQ(machine.gpu_count(), c.gpu_count);
  EXPECT_THAT(NumaNodes(machine), ElementsAreArray(c.numa));
  EXPECT_THAT(parsed->nics, ElementsAreArray(c.nics));
  for (const PairLink& pair : c.links) {
    EXPECT_EQ(LinkText(machine, pair.a, pair.b), pair.link) << "GPU" << pair.a << "-GPU" << pair.b;
    EXPECT_EQ(LinkText(machine, pair.b, pair.a), pair.link) << "GPU" << pair.b << "-GPU" << pair.a;
  }
  EXPECT_EQ(KnownPairs(machine), c.known_pairs);
  EXPECT_EQ(static_cast<int>(parsed->diagnostics.size()), c.diagnostics)
      << ::testing::PrintToString(parsed->diagnostics);
  EXPECT_EQ(machine.gpu(0).cpu_affinity, c.gpu0_cpu_affinity);
  EXPECT_TRUE(TopologyShape::Analyze(machine).ok());
}

std::vector<std::string> Numbered(const std::string& prefix, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(prefix + std::to_string(i));
  return names;
}

INSTANTIATE_TEST_SUITE_P(
    Captures, CaptureTest,
    ::testing::Values(
        // Hybrid cube mesh: each GPU has NV1/NV2 to four others, SYS to the other three. No
        // NUMA Affinity column: NUMA ids come from the two CPU affinities, which one
        // diagnostic says.
        CaptureCase{"dgx1_like_8xV100_SXM2_hybrid_cube_mesh.txt",
                    8,
                    {0, 0, 0, 0, 1, 1, 1, 1},
                    {"mlx5_0"},
                    {{0, 1, "NV1"},
                     {0, 2, "NV1"},
                     {0, 3, "NV2"},
                     {0, 4, "NV2"},
                     {0, 5, "SYS"},
                     {0, 7, "SYS"},
                     {1, 5, "NV2"},
                     {2, 6, "NV1"},
                     {3, 7, "NV1"},
                     {4, 7, "NV2"},
                     {5, 6, "NV2"},
                     {6, 7, "NV2"}},
                    28,
                    1,
                    "0-11,24-35"},
        // PARTIAL: rows GPU0-3 of 16. Their rows give 0-3 x 0-15; 4-15 among themselves are
        // unknown: 6 + 4 * 12 = 54 known pairs of 120, one diagnostic per missing row, one for
        // NUMA ids derived from CPU Affinity.
        CaptureCase{"dgx2_16x_V100_NV6_PARTIAL.txt",
                    16,
                    {0, 0, 0, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
                    Numbered("mlx5_", 10),
                    {{0, 15, "NV6"}, {3, 4, "NV6"}, {4, 5, "UNKNOWN"}, {14, 15, "UNKNOWN"}},
                    54,
                    13,
                    "0-23,48-71"},
        // Two GPUs of a DGX A100 seen through a Slurm cgroup; NIC rows cut, GPU rows whole.
        CaptureCase{"dgx_a100_2gpu_slurm_subset_NV12_PARTIAL.txt",
                    2,
                    {3, 3},
                    Numbered("NIC", 10),
                    {{0, 1, "NV12"}},
                    1,
                    0,
                    "48-63,176-191"},
        // PARTIAL: rows GPU0-5 of 8: only GPU6-GPU7 is unknown (27 of 28 pairs known).
        CaptureCase{"dgx_a100_320gb_8x_NV12_PARTIAL.txt",
                    8,
                    {3, 3, 1, 1, 7, 7, -1, -1},
                    Numbered("NIC", 10),
                    {{0, 7, "NV12"}, {5, 6, "NV12"}, {2, 3, "NV12"}, {6, 7, "UNKNOWN"}},
                    27,
                    2,
                    "48-63,176-191"},
        CaptureCase{"h100_4x_NV6_each_gpu_own_numa.txt",
                    4,
                    {3, 1, 7, 5},
                    Numbered("NIC", 4),
                    {{0, 1, "NV6"}, {0, 3, "NV6"}, {2, 3, "NV6"}},
                    6,
                    0,
                    "6,14,22,30"},
        CaptureCase{"hgx_h100_8x_nvswitch_NV18.txt",
                    8,
                    {0, 0, 0, 0, 1, 1, 1, 1},
                    {},
                    {{0, 1, "NV18"}, {0, 7, "NV18"}, {3, 4, "NV18"}, {6, 7, "NV18"}},
                    28,
                    0,
                    "0-47,96-143"},
        // Legend and NIC legend ("NIC0: mlx5_0") are skipped; NICs keep their column names.
        CaptureCase{"pcie_4x_L40S_2numa_NODE_SYS.txt",
                    4,
                    {0, 0, 1, 1},
                    {"NIC0", "NIC1"},
                    {{0, 1, "NODE"}, {0, 2, "SYS"}, {1, 3, "SYS"}, {2, 3, "NODE"}},
                    6,
                    0,
                    "0-95,192-287"},
        // TAB-separated, with an empty field before "N/A" in every GPU row.
        CaptureCase{"pcie_8x_rtx4090_2numa_all_SYS.txt",
                    8,
                    {0, 0, 0, 0, 1, 1, 1, 1},
                    {"NIC0", "NIC1"},
                    {{0, 1, "SYS"}, {0, 7, "SYS"}, {3, 4, "SYS"}, {6, 7, "SYS"}},
                    28,
                    0,
                    "0-55,112-167"}),
    [](const ::testing::TestParamInfo<CaptureCase>& param_info) {
      std::string name = param_info.param.file.substr(0, param_info.param.file.find('.'));
      std::replace_if(
          name.begin(), name.end(),
          [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
      return name;
    });

TEST(NvidiaSmiParserTest, EveryCaptureParses) {
  const std::vector<std::filesystem::path> files = gputopo::testing::FilesIn(CaptureDir(), ".txt");
  EXPECT_GE(files.size(), 8u);
  for (const std::filesystem::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(gputopo::testing::ReadFile(file));
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_GE(parsed->machine.gpu_count(), 1);
    EXPECT_GE(KnownPairs(parsed->machine), 1);
    EXPECT_TRUE(TopologyShape::Analyze(parsed->machine).ok());
    // All are `topo -m`, some with legends cut before the NV# line (but NV cells in the matrix).
    EXPECT_THAT(parsed->diagnostics, ::testing::Not(Contains(HasSubstr(kPcieOnlyNote))));
  }
}

TEST(NvidiaSmiParserTest, Utf8ByteOrderMarkIsSkipped) {
  const std::vector<std::filesystem::path> files = gputopo::testing::FilesIn(CaptureDir(), ".txt");
  ASSERT_FALSE(files.empty());
  // Space-aligned and TAB-separated ("\xef\xbb\xbf\tGPU0...") captures alike.
  for (const std::filesystem::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    const std::string text = gputopo::testing::ReadFile(file);
    Result<NvidiaSmiTopology> plain = ParseNvidiaSmiTopo(text);
    Result<NvidiaSmiTopology> with_bom = ParseNvidiaSmiTopo("\xef\xbb\xbf" + text);
    ASSERT_TRUE(plain.ok());
    ASSERT_TRUE(with_bom.ok()) << with_bom.status().ToString();
    EXPECT_EQ(with_bom->machine, plain->machine);
    EXPECT_EQ(with_bom->nics, plain->nics);
    EXPECT_EQ(with_bom->diagnostics, plain->diagnostics);
  }
}

TEST(NvidiaSmiParserTest, Dgx2PartialDiagnosticsNameEachMissingRow) {
  Result<NvidiaSmiTopology> parsed = ParseCapture("dgx2_16x_V100_NV6_PARTIAL.txt");
  ASSERT_TRUE(parsed.ok());
  EXPECT_THAT(parsed->diagnostics, Contains(HasSubstr("row GPU4 missing")));
  EXPECT_THAT(parsed->diagnostics, Contains(HasSubstr("row GPU15 missing")));
  EXPECT_THAT(parsed->diagnostics, Contains(AllOf(HasSubstr("GPU6"), HasSubstr("unknown"))));
  EXPECT_THAT(parsed->diagnostics, ::testing::Not(Contains(HasSubstr("GPU3 missing"))));
}

TEST(NvidiaSmiParserTest, TabsCrlfAndSpacesReadTheSame) {
  const std::string spaced =
      gputopo::testing::ReadFile(CaptureDir() / "dgx1_like_8xV100_SXM2_hybrid_cube_mesh.txt");
  std::string tabbed;
  std::string crlf;
  for (size_t i = 0; i < spaced.size(); ++i) {
    // Runs of two or more spaces become one TAB; "CPU Affinity" keeps its single space.
    if (spaced[i] == ' ' && i + 1 < spaced.size() && spaced[i + 1] == ' ') {
      while (i + 1 < spaced.size() && spaced[i + 1] == ' ') ++i;
      tabbed += '\t';
    } else {
      tabbed += spaced[i];
    }
    crlf += spaced[i] == '\n' ? std::string("\r\n") : std::string(1, spaced[i]);
  }
  Result<NvidiaSmiTopology> from_spaces = ParseNvidiaSmiTopo(spaced);
  Result<NvidiaSmiTopology> from_tabs = ParseNvidiaSmiTopo(tabbed);
  Result<NvidiaSmiTopology> from_crlf = ParseNvidiaSmiTopo(crlf);
  ASSERT_TRUE(from_spaces.ok());
  ASSERT_TRUE(from_tabs.ok());
  ASSERT_TRUE(from_crlf.ok());
  EXPECT_EQ(from_tabs->machine, from_spaces->machine);
  EXPECT_EQ(from_crlf->machine, from_spaces->machine);
  EXPECT_THAT(from_spaces->diagnostics, ElementsAre(HasSubstr(kDerivedNumaNote)));
  EXPECT_EQ(from_tabs->diagnostics, from_spaces->diagnostics);
  EXPECT_EQ(from_crlf->diagnostics, from_spaces->diagnostics);
}

// --- Captures analysed into shapes: NVLink islands and NUMA nodes are separate layers. ---

struct ShapeCase {
  std::string file;
  int islands;
  std::vector<int> numa_ids;
  bool island0_in_one_numa;  // every GPU of island 0 is on one known NUMA node
};

class CaptureShapeTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(CaptureShapeTest, IslandsAndNumaNodes) {
  const ShapeCase& c = GetParam();
  Result<NvidiaSmiTopology> parsed = ParseCapture(c.file);
  ASSERT_TRUE(parsed.ok());
  Result<std::shared_ptr<const TopologyShape>> shape = TopologyShape::Analyze(parsed->machine);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ((*shape)->island_count(), c.islands);
  EXPECT_THAT((*shape)->numa_ids(), ElementsAreArray(c.numa_ids));
  EXPECT_EQ((*shape)->InOneNuma((*shape)->island(0)), c.island0_in_one_numa);
  if (c.islands == 1) {
    EXPECT_EQ((*shape)->island(0), (*shape)->all_gpus());
  }
}

INSTANTIATE_TEST_SUITE_P(Captures, CaptureShapeTest,
                         ::testing::Values(
                             // One island spanning both NUMA nodes.
                             ShapeCase{
                                 "dgx1_like_8xV100_SXM2_hybrid_cube_mesh.txt", 1, {0, 1}, false},
                             ShapeCase{"hgx_h100_8x_nvswitch_NV18.txt", 1, {0, 1}, false},
                             // One island, four NUMA nodes: NVLink-local is not NUMA-local.
                             ShapeCase{"h100_4x_NV6_each_gpu_own_numa.txt", 1, {1, 3, 5, 7}, false},
                             // No NVLink: every GPU is an island of its own.
                             ShapeCase{"pcie_8x_rtx4090_2numa_all_SYS.txt", 8, {0, 1}, true},
                             // Rows GPU0-3 link every GPU, so the partial capture is still one
                             // island; GPUs 4-15 have unknown NUMA nodes.
                             ShapeCase{"dgx2_16x_V100_NV6_PARTIAL.txt", 1, {0}, false}));

// --- Captures from the wild: headers mangled by pasting, odd labels, `topo -mp`. ---

// h100_4x_NV6_each_gpu_own_numa.txt with NIC2 and NIC3 run together in the header: the header has
// 10 columns, each GPU row 11 cells.
constexpr char kNicsRunTogether[] =
    "        GPU0    GPU1    GPU2    GPU3    NIC0    NIC1    NIC2NIC3        CPU Affinity    "
    "NUMA Affinity   GPU NUMA ID\n"
    "GPU0     X      NV6     NV6     NV6     PIX     SYS     SYS     SYS     6,14,22,30      3 "
    "              N/A\n"
    "GPU1    NV6      X      NV6     NV6     SYS     PIX     SYS     SYS     4,12,20,28      1 "
    "              N/A\n"
    "GPU2    NV6     NV6      X      NV6     SYS     SYS     PIX     SYS     7,15,23,31      7 "
    "              N/A\n"
    "GPU3    NV6     NV6     NV6      X      SYS     SYS     SYS     PIX     5,13,21,29      5 "
    "              N/A\n"
    "NIC0    PIX     SYS     SYS     SYS      X      SYS     SYS     SYS\n";

TEST(NvidiaSmiParserTest, MoreCellsThanColumnsReadsAttributesFromTheEnd) {
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(kNicsRunTogether);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->machine.gpu_count(), 4);
  EXPECT_EQ(KnownPairs(parsed->machine), 6);
  EXPECT_EQ(LinkText(parsed->machine, 0, 3), "NV6");
  // Not the CPU range as NUMA node and SYS as CPU affinity.
  EXPECT_THAT(NumaNodes(parsed->machine), ElementsAre(3, 1, 7, 5));
  EXPECT_EQ(parsed->machine.gpu(0).cpu_affinity, "6,14,22,30");
  EXPECT_EQ(parsed->machine.gpu(3).cpu_affinity, "5,13,21,29");
  EXPECT_THAT(parsed->nics, ElementsAre("NIC0", "NIC1", "NIC2NIC3"));
  const auto read_from_end = [](const std::string& row) {
    return AllOf(HasSubstr("row " + row + " has 11 cells, the header 10"),
                 HasSubstr("CPU Affinity, NUMA Affinity, GPU NUMA ID from the end of the row"));
  };
  EXPECT_THAT(parsed->diagnostics, ElementsAre(read_from_end("GPU0"), read_from_end("GPU1"),
                                               read_from_end("GPU2"), read_from_end("GPU3")));
}

TEST(NvidiaSmiParserTest, MoreCellsThanColumnsWithCpuAffinityOnly) {
  // dgx1_like_8xV100_SXM2_hybrid_cube_mesh.txt shape, four GPUs, mlx5 names run together.
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "        GPU0    GPU1    GPU2    GPU3    mlx5_0mlx5_1    CPU Affinity\n"
      "GPU0     X      NV1     NV1     NV2     NODE    SYS     0-11,24-35\n"
      "GPU1    NV1      X      NV2     NV1     NODE    SYS     0-11,24-35\n"
      "GPU2    NV1     NV2      X      NV2     SYS     PIX     12-23,36-47\n"
      "GPU3    NV2     NV1     NV2      X      SYS     PIX     12-23,36-47\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->machine.gpu(0).cpu_affinity, "0-11,24-35");
  EXPECT_EQ(parsed->machine.gpu(2).cpu_affinity, "12-23,36-47");
  EXPECT_THAT(NumaNodes(parsed->machine), ElementsAre(0, 0, 1, 1));
  EXPECT_THAT(parsed->diagnostics, ElementsAre(HasSubstr("reading CPU Affinity from the end"),
                                               HasSubstr("reading CPU Affinity from the end"),
                                               HasSubstr("reading CPU Affinity from the end"),
                                               HasSubstr("reading CPU Affinity from the end"),
                                               HasSubstr(kDerivedNumaNote)));
}

TEST(NvidiaSmiParserTest, MoreCellsThanColumnsNamesOnlyKnownAttributes) {
  // An unknown, unprintable attribute column after CPU Affinity is still read from the end, but
  // not named in the diagnostic.
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "\tGPU0\tGPU1\tNIC0NIC1\tCPU Affinity\t\x01\x02\n"
      "GPU0\t X \tNV4\tPIX\tSYS\t0-7\tN/A\n"
      "GPU1\tNV4\t X \tSYS\tPIX\t8-15\tN/A\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->machine.gpu(0).cpu_affinity, "0-7");
  EXPECT_EQ(parsed->machine.gpu(1).cpu_affinity, "8-15");
  EXPECT_THAT(parsed->diagnostics, Contains(HasSubstr("reading CPU Affinity from the end")));
  for (const std::string& line : parsed->diagnostics) EXPECT_TRUE(IsPrintableAscii(line)) << line;
}

struct RunIntoCase {
  std::string label;   // test name
  std::string header;  // the header line
  std::string nic;     // the NIC name split off
};

class NicRunsIntoCpuAffinityTest : public ::testing::TestWithParam<RunIntoCase> {};

TEST_P(NicRunsIntoCpuAffinityTest, KeepsTheCpuAffinityColumn) {
  const RunIntoCase& c = GetParam();
  // h100_4x_NV6_each_gpu_own_numa.txt rows.
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      c.header +
      "\n"
      "GPU0     X      NV6     NV6     NV6     PIX     SYS     SYS     SYS     6,14,22,30      3 "
      "              N/A\n"
      "GPU1    NV6      X      NV6     NV6     SYS     PIX     SYS     SYS     4,12,20,28      1 "
      "              N/A\n"
      "GPU2    NV6     NV6      X      NV6     SYS     SYS     PIX     SYS     7,15,23,31      7 "
      "              N/A\n"
      "GPU3    NV6     NV6     NV6      X      SYS     SYS     SYS     PIX     5,13,21,29      5 "
      "              N/A\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_THAT(parsed->nics, ElementsAre("NIC0", "NIC1", "NIC2", c.nic));
  EXPECT_EQ(parsed->machine.gpu(0).cpu_affinity, "6,14,22,30");
  EXPECT_EQ(parsed->machine.gpu(1).cpu_affinity, "4,12,20,28");
  EXPECT_THAT(NumaNodes(parsed->machine), ElementsAre(3, 1, 7, 5));
  EXPECT_THAT(parsed->diagnostics,
              ElementsAre(HasSubstr("'" + c.nic + "' runs into 'CPU Affinity'")));
}

INSTANTIATE_TEST_SUITE_P(
    Headers, NicRunsIntoCpuAffinityTest,
    ::testing::Values(
        RunIntoCase{"Spaces",
                    "        GPU0    GPU1    GPU2    GPU3    NIC0    NIC1    NIC2    NIC3CPU "
                    "Affinity    NUMA Affinity   GPU NUMA ID",
                    "NIC3"},
        RunIntoCase{"SpacesMlx5",
                    "        GPU0    GPU1    GPU2    GPU3    NIC0    NIC1    NIC2    mlx5_3CPU "
                    "Affinity    NUMA Affinity   GPU NUMA ID",
                    "mlx5_3"},
        RunIntoCase{"Tabs",
                    "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tNIC2\tNIC3CPU Affinity\tNUMA "
                    "Affinity\tGPU NUMA ID",
                    "NIC3"},
        RunIntoCase{"TabLostBeforeCpuAffinity",
                    "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tNIC2\tmlx5_3 CPU Affinity\tNUMA "
                    "Affinity\tGPU NUMA ID",
                    "mlx5_3"}),
    [](const ::testing::TestParamInfo<RunIntoCase>& param_info) { return param_info.param.label; });

TEST(NvidiaSmiParserTest, AttributeNamesRunTogether) {
  for (const std::string& header : {
           std::string("        GPU0    GPU1    NIC0CPU AffinityNUMA AffinityGPU NUMA ID"),
           std::string("\tGPU0\tGPU1\tNIC0CPU AffinityNUMA AffinityGPU NUMA ID"),
       }) {
    SCOPED_TRACE(header);
    Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(header +
                                                          "\n"
                                                          "GPU0  X    NV12 PXB  48-63  3  N/A\n"
                                                          "GPU1  NV12 X    PXB  48-63  3  N/A\n");
    ASSERT_TRUE(parsed.ok());
    EXPECT_THAT(parsed->nics, ElementsAre("NIC0"));
    EXPECT_EQ(parsed->machine.gpu(1).cpu_affinity, "48-63");
    EXPECT_THAT(NumaNodes(parsed->machine), ElementsAre(3, 3));
    EXPECT_THAT(parsed->diagnostics, ::testing::UnorderedElementsAre(
                                         HasSubstr("'NIC0' runs into 'CPU Affinity'"),
                                         // "'CPU Affinity' runs into" from TABs, "'Affinity'"
                                         // from spaces: either says what happened.
                                         HasSubstr("Affinity' runs into 'NUMA Affinity'"),
                                         HasSubstr("Affinity' runs into 'GPU NUMA ID'")));
  }
}

TEST(NvidiaSmiParserTest, GpuLabelPastTheRangeIsAnError) {
  for (const std::string& label :
       {std::string("GPU4294967296"), std::string("GPU99999999999999999999"), std::string("GPU64"),
        std::string("GPU1000")}) {
    SCOPED_TRACE(label);
    // In the middle of the header and as its first column: never dropped, never a NIC.
    for (const std::string& header : {"        GPU0    GPU1    " + label + "    CPU Affinity\n",
                                      "\t" + label + "\tGPU0\tGPU1\tCPU Affinity\n"}) {
      Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(header +
                                                            "GPU0     X      NV1     NV1   0-7\n"
                                                            "GPU1    NV1      X      NV1   0-7\n");
      ASSERT_FALSE(parsed.ok()) << ::testing::PrintToString(parsed->nics);
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
      EXPECT_THAT(parsed.status().message(), AllOf(HasSubstr("'" + label + "'"),
                                                   HasSubstr("not a GPU number"), HasSubstr("63")));
    }
  }
  // GPU63 is the last possible one.
  Result<NvidiaSmiTopology> last = ParseNvidiaSmiTopo("        GPU0    GPU63\n");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->machine.gpu_count(), 2);
}

TEST(NvidiaSmiParserTest, GpuRowLabelPastTheRangeIsDiagnosed) {
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
      "GPU0     X      NV2     0-7             0\n"
      "GPU4294967296    NV2      X      0-7             0\n"
      "GPU1    NV2      X      0-7             0\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->machine.gpu_count(), 2);
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "NV2");
  EXPECT_THAT(parsed->diagnostics,
              ElementsAre(AllOf(HasSubstr("line 3"), HasSubstr("row 'GPU4294967296'"),
                                HasSubstr("not a GPU number"), HasSubstr("ignored"))));
}

// pcie_4x_L40S_2numa_NODE_SYS.txt as `nvidia-smi topo -mp` prints it: the same header, a legend
// that ends at PIX, no NV# line.
constexpr char kTopoMp[] =
    "        GPU0    GPU1    GPU2    GPU3    NIC0    NIC1    CPU Affinity    NUMA Affinity   GPU "
    "NUMA ID\n"
    "GPU0     X      NODE    SYS     SYS     SYS     SYS     0-95,192-287    0               N/A\n"
    "GPU1    NODE     X      SYS     SYS     SYS     SYS     0-95,192-287    0               N/A\n"
    "GPU2    SYS     SYS      X      NODE    NODE    NODE    96-191,288-383  1               N/A\n"
    "GPU3    SYS     SYS     NODE     X      NODE    NODE    96-191,288-383  1               N/A\n"
    "NIC0    SYS     SYS     NODE    NODE     X      PIX\n"
    "NIC1    SYS     SYS     NODE    NODE    PIX      X\n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
    "(e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
    "within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
    "Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "\n"
    "NIC Legend:\n"
    "\n"
    "  NIC0: mlx5_0\n"
    "  NIC1: mlx5_1\n";

TEST(NvidiaSmiParserTest, TopoMpSaysNvLinksAreNotShown) {
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(kTopoMp);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "NODE");
  EXPECT_THAT(NumaNodes(parsed->machine), ElementsAre(0, 0, 1, 1));
  EXPECT_THAT(parsed->diagnostics,
              ElementsAre(AllOf(HasSubstr(kPcieOnlyNote), HasSubstr("NVLinks are not shown"))));

  // The same capture from `topo -m`: its legend has the NV# line.
  std::string with_nv_line = kTopoMp;
  const std::string pix_line = "  PIX  = Connection traversing at most a single PCIe bridge\n";
  with_nv_line.insert(with_nv_line.find(pix_line) + pix_line.size(),
                      "  NV#  = Connection traversing a bonded set of # NVLinks\n");
  parsed = ParseNvidiaSmiTopo(with_nv_line);
  ASSERT_TRUE(parsed.ok());
  EXPECT_THAT(parsed->diagnostics, IsEmpty());

  // No legend at all: nothing to tell -m from -mp by.
  parsed = ParseNvidiaSmiTopo(std::string(kTopoMp).substr(0, std::string(kTopoMp).find("\n\n")));
  ASSERT_TRUE(parsed.ok());
  EXPECT_THAT(parsed->diagnostics, IsEmpty());
}

// --- Hand-written inputs. ---

TEST(NvidiaSmiParserTest, NoHeaderIsAnError) {
  for (const std::string& text : {
           std::string(),
           std::string("\n\n   \n"),
           std::string("hello world\nthis is not nvidia-smi\n"),
           std::string("NVIDIA-SMI has failed because it couldn't communicate with the driver.\n"),
           // Rows without their header.
           std::string("GPU0\t X \tNV1\t0-11\nGPU1\tNV1\t X \t0-11\n"),
           // A legend alone.
           std::string("Legend:\n\n  X    = Self\n  NV#  = Connection traversing NVLinks\n"),
           // Columns but no GPU among them.
           std::string("\tNIC0\tNIC1\tCPU Affinity\n"),
       }) {
    Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(text);
    ASSERT_FALSE(parsed.ok()) << ::testing::PrintToString(text);
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(NvidiaSmiParserTest, HeaderOnlyKnowsNoLinks) {
  Result<NvidiaSmiTopology> parsed =
      ParseNvidiaSmiTopo("\tGPU0\tGPU1\tGPU2\tNIC0\tCPU Affinity\tNUMA Affinity\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->machine.gpu_count(), 3);
  EXPECT_EQ(KnownPairs(parsed->machine), 0);
  EXPECT_THAT(NumaNodes(parsed->machine), ElementsAre(-1, -1, -1));
  EXPECT_THAT(parsed->nics, ElementsAre("NIC0"));
  EXPECT_THAT(parsed->diagnostics,
              ElementsAre(HasSubstr("row GPU0 missing"), HasSubstr("row GPU1 missing"),
                          HasSubstr("row GPU2 missing")));
}

TEST(NvidiaSmiParserTest, TextAroundTheMatrixIsSkipped) {
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "$ nvidia-smi topo -m\n"
      "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
      "GPU0     X      PIX     0-7             0\n"
      "GPU1    PIX      X      0-7             0\n"
      "\n"
      "Legend:\n"
      "  X    = Self\n"
      "  NV#  = Connection traversing a bonded set of # NVLinks\n"
      "NIC Legend:\n"
      "  NIC0: mlx5_0\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "PIX");
  EXPECT_THAT(NumaNodes(parsed->machine), ElementsAre(0, 0));
  EXPECT_THAT(parsed->diagnostics, IsEmpty());
}

class BadCellTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BadCellTest, BothRowsUnreadableLeavesTheLinkUnknown) {
  const std::string& cell = GetParam();
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "\tGPU0\tGPU1\tCPU Affinity\n"
      "GPU0\t X \t" +
      cell +
      "\t0-7\n"
      "GPU1\t" +
      cell + "\t X \t0-7\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "UNKNOWN");
  EXPECT_THAT(
      parsed->diagnostics,
      ElementsAre(
          AllOf(HasSubstr("row GPU0"), HasSubstr("column GPU1"), HasSubstr("'" + cell + "'")),
          AllOf(HasSubstr("row GPU1"), HasSubstr("column GPU0")), HasSubstr(kDerivedNumaNote)));
}

TEST_P(BadCellTest, TheOtherRowStillGivesTheLink) {
  const std::string& cell = GetParam();
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "\tGPU0\tGPU1\tCPU Affinity\n"
      "GPU0\t X \t" +
      cell +
      "\t0-7\n"
      "GPU1\tNV4\t X \t0-7\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "NV4");
  EXPECT_THAT(parsed->diagnostics,
              ElementsAre(HasSubstr("'" + cell + "'"), HasSubstr(kDerivedNumaNote)));
}

INSTANTIATE_TEST_SUITE_P(Cells, BadCellTest,
                         ::testing::Values("NVx", "FOO", "NV", "NV0", "NV-2", "NV999", "nv2", "N/A",
                                           "X"));

struct AsymmetricCase {
  std::string row0;  // what row GPU0 says of GPU1
  std::string row1;  // what row GPU1 says of GPU0
  std::string kept;
  bool diagnosed;
};

class AsymmetricTest : public ::testing::TestWithParam<AsymmetricCase> {};

TEST_P(AsymmetricTest, KeepsTheWeakerLink) {
  const AsymmetricCase& c = GetParam();
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "        GPU0    GPU1\n"
      "GPU0     X      " +
      c.row0 +
      "\n"
      "GPU1    " +
      c.row1 + "      X\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), c.kept);
  if (c.diagnosed) {
    EXPECT_THAT(parsed->diagnostics,
                ElementsAre(AllOf(HasSubstr("GPU0-GPU1"), HasSubstr(c.row0), HasSubstr(c.row1),
                                  HasSubstr("keeping the weaker " + c.kept))));
  } else {
    EXPECT_THAT(parsed->diagnostics, IsEmpty());
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, AsymmetricTest,
                         ::testing::Values(
                             // NV2 weighs 50, SYS 6.
                             AsymmetricCase{"NV2", "SYS", "SYS", true},
                             AsymmetricCase{"SYS", "NV2", "SYS", true},
                             // NV4 weighs 100, NV2 50.
                             AsymmetricCase{"NV4", "NV2", "NV2", true},
                             // PIX 20 against NODE 10.
                             AsymmetricCase{"PIX", "NODE", "NODE", true},
                             // SOC is the old name of SYS: the same link.
                             AsymmetricCase{"SOC", "SYS", "SYS", false}));

TEST(NvidiaSmiParserTest, TruncatedRowKeepsWhatIsThere) {
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "        GPU0    GPU1    GPU2    CPU Affinity    NUMA Affinity\n"
      "GPU0     X      NV1\n"
      "GPU1    NV1      X      NV2     0-7             0\n"
      "GPU2\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "NV1");
  EXPECT_EQ(LinkText(parsed->machine, 1, 2), "NV2");
  EXPECT_EQ(LinkText(parsed->machine, 0, 2), "UNKNOWN");
  // GPU0's and GPU2's NUMA cells were cut off.
  EXPECT_THAT(NumaNodes(parsed->machine), ElementsAre(-1, 0, -1));
  EXPECT_THAT(parsed->diagnostics,
              ElementsAre(AllOf(HasSubstr("line 2"), HasSubstr("row GPU0 has 2 cells")),
                          AllOf(HasSubstr("line 4"), HasSubstr("row GPU2 has 0 cells"))));
}

TEST(NvidiaSmiParserTest, ExtraCellsAreIgnored) {
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "        GPU0    GPU1\n"
      "GPU0     X      NV1     PIX     SYS\n"
      "GPU1    NV1      X\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "NV1");
  EXPECT_THAT(parsed->diagnostics, ElementsAre(HasSubstr("extra cells are ignored")));
}

TEST(NvidiaSmiParserTest, NumaAffinityCells) {
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \tSYS\tSYS\tSYS\t0-7\t2\tN/A\n"
      "GPU1\tSYS\t X \tSYS\tSYS\t0-7\tN/A\t\tN/A\n"
      "GPU2\tSYS\tSYS\t X \tSYS\t0-7\tzero\tN/A\n"
      "GPU3\tSYS\tSYS\tSYS\t X \tN/A\t99999\tN/A\n");
  ASSERT_TRUE(parsed.ok());
  // "N/A" is unknown without a word; "zero" and an id past 1023 are diagnosed.
  EXPECT_THAT(NumaNodes(parsed->machine), ElementsAre(2, -1, -1, -1));
  EXPECT_THAT(parsed->diagnostics, ElementsAre(AllOf(HasSubstr("row GPU2"), HasSubstr("'zero'")),
                                               AllOf(HasSubstr("row GPU3"), HasSubstr("'99999'"))));
  EXPECT_EQ(parsed->machine.gpu(0).cpu_affinity, "0-7");
  EXPECT_EQ(parsed->machine.gpu(3).cpu_affinity, "");
}

TEST(NvidiaSmiParserTest, NumaFromCpuAffinityInOrderOfFirstAppearance) {
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "        GPU0    GPU1    GPU2    GPU3    CPU Affinity\n"
      "GPU0     X      SYS     NODE    SYS     16-31\n"
      "GPU1    SYS      X      SYS     NODE    0-15\n"
      "GPU2    NODE    SYS      X      SYS     16-31\n"
      "GPU3    SYS     NODE    SYS      X      N/A\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_THAT(NumaNodes(parsed->machine), ElementsAre(0, 1, 0, -1));
  // Made-up ids are never silent.
  EXPECT_THAT(parsed->diagnostics,
              ElementsAre(AllOf(HasSubstr("no NUMA Affinity column"), HasSubstr(kDerivedNumaNote),
                                HasSubstr("order of first appearance"))));
}

TEST(NvidiaSmiParserTest, GpuColumnsNotNumberedFromZero) {
  // What a container that sees GPUs 2 and 5 might print.
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "        GPU5    GPU2    CPU Affinity\n"
      "GPU5     X      NV2     0-7\n"
      "GPU2    NV2      X      8-15\n");
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->machine.gpu_count(), 2);
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "NV2");
  // GPU2 is index 0, GPU5 index 1.
  EXPECT_EQ(parsed->machine.gpu(0).cpu_affinity, "8-15");
  EXPECT_EQ(parsed->machine.gpu(1).cpu_affinity, "0-7");
  EXPECT_THAT(parsed->diagnostics,
              ElementsAre(HasSubstr("not GPU0..GPU1"), HasSubstr(kDerivedNumaNote)));
}

TEST(NvidiaSmiParserTest, GpuColumnsInAnyOrder) {
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "        GPU1    GPU0    GPU2\n"
      "GPU0    NV1      X      SYS\n"
      "GPU1     X      NV1     NV2\n"
      "GPU2    NV2     SYS      X\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "NV1");
  EXPECT_EQ(LinkText(parsed->machine, 0, 2), "SYS");
  EXPECT_EQ(LinkText(parsed->machine, 1, 2), "NV2");
  EXPECT_THAT(parsed->diagnostics, IsEmpty());
}

TEST(NvidiaSmiParserTest, OddRowsAreDiagnosed) {
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(
      "        GPU0    GPU1    GPU1\n"
      "GPU0     X      PHB     PHB\n"
      "GPU0     X      SYS     SYS\n"
      "GPU1    PHB     PHB     PHB\n"
      "GPU7    SYS     SYS     SYS\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->machine.gpu_count(), 2);
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "PHB");
  EXPECT_THAT(parsed->diagnostics,
              ElementsAre(HasSubstr("column GPU1 repeated"), HasSubstr("row GPU0 repeated"),
                          AllOf(HasSubstr("row GPU1"), HasSubstr("expected X")),
                          HasSubstr("row GPU7 has no column")));
}

TEST(NvidiaSmiParserTest, RepeatedHeaderEndsTheMatrix) {
  const std::string capture =
      "        GPU0    GPU1\n"
      "GPU0     X      NV1\n"
      "GPU1    NV1      X\n";
  Result<NvidiaSmiTopology> parsed =
      ParseNvidiaSmiTopo(capture + capture.substr(0, capture.find('\n') + 1) + "GPU0 X SYS\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "NV1");
  EXPECT_THAT(parsed->diagnostics, ElementsAre(HasSubstr("header repeats")));
}

TEST(NvidiaSmiParserTest, GpuCountLimit) {
  auto header = [](int gpus) {
    std::string line;
    for (int g = 0; g < gpus; ++g) line += "\tGPU" + std::to_string(g);
    return line + "\tCPU Affinity\n";
  };
  Result<NvidiaSmiTopology> at_limit = ParseNvidiaSmiTopo(header(kMaxGpusPerNode));
  ASSERT_TRUE(at_limit.ok());
  EXPECT_EQ(at_limit->machine.gpu_count(), kMaxGpusPerNode);

  Result<NvidiaSmiTopology> past_limit = ParseNvidiaSmiTopo(header(kMaxGpusPerNode + 1));
  ASSERT_FALSE(past_limit.ok());
  EXPECT_THAT(past_limit.status().message(), HasSubstr("more than 64 GPU columns"));
  // A header of 200,000 GPU columns fails fast: no quadratic work, no 200,000-squared matrix.
  EXPECT_FALSE(ParseNvidiaSmiTopo(header(200'000)).ok());
}

TEST(NvidiaSmiParserTest, VeryLongLines) {
  std::string long_row = "GPU0     X      ";
  for (int i = 0; i < 200'000; ++i) long_row += "NV1 ";
  Result<NvidiaSmiTopology> parsed =
      ParseNvidiaSmiTopo("        GPU0    GPU1\n" + long_row + "\nGPU1    NV1      X\n");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "NV1");
  EXPECT_THAT(parsed->diagnostics, ElementsAre(HasSubstr("extra cells are ignored")));

  // One enormous unreadable cell is quoted, cut short.
  const std::string huge_cell(1'000'000, 'Z');
  parsed = ParseNvidiaSmiTopo("        GPU0    GPU1\nGPU0 X " + huge_cell + "\n");
  ASSERT_TRUE(parsed.ok());
  ASSERT_THAT(parsed->diagnostics, Contains(HasSubstr("ZZZ...'")));
  for (const std::string& line : parsed->diagnostics) EXPECT_LT(line.size(), 200u);

  EXPECT_FALSE(ParseNvidiaSmiTopo(std::string(5'000'000, 'a')).ok());
}

TEST(NvidiaSmiParserTest, DiagnosticsAreBounded) {
  // 64 rows of 63 unreadable cells each: far more complaints than anyone reads.
  std::string text;
  for (int g = 0; g < kMaxGpusPerNode; ++g) text += " GPU" + std::to_string(g);
  text += "\n";
  for (int row = 0; row < kMaxGpusPerNode; ++row) {
    text += "GPU" + std::to_string(row);
    for (int col = 0; col < kMaxGpusPerNode; ++col) text += col == row ? " X" : " BAD";
    text += "\n";
  }
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(text);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(KnownPairs(parsed->machine), 0);
  EXPECT_LE(parsed->diagnostics.size(), 300u);
  EXPECT_THAT(parsed->diagnostics.back(), HasSubstr("more diagnostics omitted"));
}

TEST(NvidiaSmiParserTest, BinaryBytes) {
  // A NUL, control bytes and invalid UTF-8 in cells, the CPU affinity and a NIC name.
  constexpr char kText[] =
      "\tGPU0\tGPU1\tNIC\xc3\x28\tCPU Affinity\n"
      "GPU0\t X \tNV\0\x01\xff\tSYS\t0-7\n"
      "GPU1\t\x80\x81\t X \tSYS\t\x7f\n";
  Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(std::string(kText, sizeof(kText) - 1));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(LinkText(parsed->machine, 0, 1), "UNKNOWN");
  EXPECT_THAT(parsed->nics, IsEmpty());
  EXPECT_EQ(parsed->machine.gpu(1).cpu_affinity, "");
  ASSERT_EQ(parsed->diagnostics.size(), 5u);
  EXPECT_THAT(parsed->diagnostics[0], HasSubstr("'NIC\\xc3('"));
  EXPECT_THAT(parsed->diagnostics[1], HasSubstr("'NV\\x00\\x01\\xff'"));
  EXPECT_THAT(parsed->diagnostics[2], HasSubstr("'\\x80\\x81'"));
  EXPECT_THAT(parsed->diagnostics[3], HasSubstr("'\\x7f'"));
  // GPU0's readable CPU affinity gives it a made-up NUMA id.
  EXPECT_THAT(parsed->diagnostics[4], HasSubstr(kDerivedNumaNote));
  for (const std::string& line : parsed->diagnostics) EXPECT_TRUE(IsPrintableAscii(line)) << line;
}

// Random text built from the pieces nvidia-smi prints, and raw bytes: the parser must neither
// crash nor return an inconsistent topology. Seeded, so every run is the same.
TEST(NvidiaSmiParserTest, RandomInputNeverBreaksInvariants) {
  const std::vector<std::string> pieces = {
      "GPU0",   "GPU1",   "GPU2", "GPU63", "GPU64",    "GPU99999999999",
      "NIC0",   "mlx5_0", "X",    " X ",   "NV1",      "NV18",
      "SYS",    "PIX",    "N/A",  "CPU",   "Affinity", "NUMA",
      "ID",     "0-7",    "3",    "-1",    "\t",       "\t\t",
      " ",      "   ",    "\n",   "\r\n",  "=",        ":",
      "Legend:"};
  std::mt19937 random(20240601);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    const int length = static_cast<int>(random() % 120);
    for (int i = 0; i < length; ++i) {
      if (random() % 10 == 0) {
        text += static_cast<char>(random() % 256);
      } else {
        text += pieces[random() % pieces.size()];
      }
    }
    // Often give it a real header so that rows get read.
    if (round % 2 == 0) text = "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n" + text;
    Result<NvidiaSmiTopology> parsed = ParseNvidiaSmiTopo(text);
    if (!parsed.ok()) continue;
    const MachineTopology& machine = parsed->machine;
    ASSERT_GE(machine.gpu_count(), 1) << ::testing::PrintToString(text);
    ASSERT_LE(machine.gpu_count(), kMaxGpusPerNode);
    for (const std::string& line : parsed->diagnostics) {
      ASSERT_TRUE(IsPrintableAscii(line)) << line;
    }
    for (const std::string& nic : parsed->nics) ASSERT_TRUE(IsPrintableAscii(nic)) << nic;
    for (const GpuInfo& gpu : machine.gpus()) ASSERT_TRUE(IsPrintableAscii(gpu.cpu_affinity));
    ASSERT_TRUE(TopologyShape::Analyze(machine).ok()) << ::testing::PrintToString(text);
  }
}

}  // namespace
}  // namespace gputopo::topology

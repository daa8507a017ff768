#include "topology/nvidia_smi_parser.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <utility>

#include "topology/link_type.h"

namespace gputopo::topology {
namespace {

// Arbitrary input must not produce unbounded output: diagnostics past this many are counted.
constexpr size_t kMaxDiagnostics = 256;
// Input text quoted in a diagnostic is cut to this many bytes.
constexpr size_t kMaxQuotedBytes = 40;

constexpr std::string_view kCpuAffinityName = "CPU Affinity";
constexpr std::string_view kNumaAffinityName = "NUMA Affinity";
constexpr std::string_view kGpuNumaIdName = "GPU NUMA ID";
// The columns after the GPU and NIC columns. Their names are several words: in space-aligned
// text they are re-joined.
constexpr std::string_view kAttributeColumns[] = {kCpuAffinityName, kNumaAffinityName,
                                                  kGpuNumaIdName};

// Collects diagnostics up to kMaxDiagnostics, then counts the rest.
class Diagnostics {
 public:
  void Add(std::string line) {
    if (lines_.size() < kMaxDiagnostics) {
      lines_.push_back(std::move(line));
    } else {
      ++dropped_;
    }
  }
  std::vector<std::string> Take() && {
    if (dropped_ > 0) lines_.push_back(std::to_string(dropped_) + " more diagnostics omitted");
    return std::move(lines_);
  }

 private:
  std::vector<std::string> lines_;
  size_t dropped_ = 0;
};

enum class ColumnRole { kGpu, kNic, kCpuAffinity, kNumaAffinity, kOther };

struct Column {
  std::string name;
  ColumnRole role = ColumnRole::kOther;
  int gpu = -1;  // the GPU index when role == kGpu
};

struct Header {
  std::string_view line;  // trimmed, to recognise a repeated header
  std::vector<Column> columns;
  std::vector<std::string> gpu_names;  // column name of each GPU index
  std::map<int, int> gpu_by_number;    // N of a "GPU<N>" column -> GPU index
  // Index of the first attribute column (CPU Affinity, ...); columns.size() when none.
  size_t attributes_begin = 0;
  bool has_cpu_affinity = false;
  bool has_numa_affinity = false;
};

// What one GPU's row said.
struct GpuRow {
  bool read = false;
  std::vector<std::optional<Link>> links;  // per GPU index, all set; nullopt = no readable cell
  std::string cpu_affinity;                // empty when absent or "N/A"
  int numa_node = -1;
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view Trim(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> SplitWhitespace(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

// "a  b" -> "a b".
std::string JoinWords(const std::vector<std::string_view>& words, size_t begin, size_t end) {
  std::string joined;
  for (size_t i = begin; i < end; ++i) {
    if (i > begin) joined += ' ';
    joined += words[i];
  }
  return joined;
}

// How many of words[i..] spell `name` (its words separated by single spaces); 0 when they do not.
size_t WordsSpelling(const std::vector<std::string_view>& words, size_t i, std::string_view name) {
  for (size_t count = 1; i + count <= words.size(); ++count) {
    const std::string_view word = words[i + count - 1];
    if (name.substr(0, word.size()) != word) return 0;
    name.remove_prefix(word.size());
    if (name.empty()) return count;
    if (name.front() != ' ') return 0;
    name.remove_prefix(1);
  }
  return 0;
}

// A column name that ran into the attribute name after it: "NIC3CPU Affinity" is `prefix`
// "NIC3" and `name` "CPU Affinity".
struct RunTogether {
  std::string prefix;
  std::string name;
};

struct HeaderTokens {
  std::vector<std::string> tokens;
  std::vector<RunTogether> run_together;
};

// Peels attribute names off the end of a TAB field: "NIC3CPU Affinity" and "NIC3 CPU Affinity"
// are "NIC3" then "CPU Affinity". Appends the pieces to `out` in order.
void SplitTabField(std::string field, HeaderTokens& out) {
  std::vector<std::string> pieces;  // last piece first
  for (bool found = true; found;) {
    found = false;
    for (std::string_view name : kAttributeColumns) {
      const std::string_view text = field;
      if (text.size() <= name.size() || !text.ends_with(name)) continue;
      std::string prefix(Trim(text.substr(0, text.size() - name.size())));
      if (prefix.empty()) continue;
      pieces.emplace_back(name);
      field = std::move(prefix);
      found = true;
      break;
    }
  }
  pieces.push_back(std::move(field));
  std::reverse(pieces.begin(), pieces.end());
  for (size_t i = 1; i < pieces.size(); ++i) {
    out.run_together.push_back({pieces[i - 1], pieces[i]});
  }
  out.tokens.insert(out.tokens.end(), std::make_move_iterator(pieces.begin()),
                    std::make_move_iterator(pieces.end()));
}

// Splits a word that ends with the first word of an attribute name followed by the rest of that
// name: "NIC3CPU" "Affinity" becomes "NIC3" "CPU" "Affinity". Works from the end so that
// "NIC3CPU" "AffinityNUMA" "Affinity" splits twice; linear in the number of words.
std::vector<std::string_view> SplitRunTogetherWords(const std::vector<std::string_view>& words,
                                                    std::vector<RunTogether>& run_together) {
  std::vector<std::string_view> reversed;  // the result, last word first
  for (size_t i = words.size(); i-- > 0;) {
    std::string_view word = words[i];
    for (std::string_view name : kAttributeColumns) {
      const std::string_view first = name.substr(0, name.find(' '));
      if (word.size() <= first.size() || !word.ends_with(first)) continue;
      // The rest of the name, word by word, against the words after this one.
      std::string_view rest = name.substr(first.size());
      size_t next = reversed.size();
      bool rest_follows = true;
      while (rest_follows && !rest.empty()) {
        rest.remove_prefix(1);  // the space
        const std::string_view part = rest.substr(0, rest.find(' '));
        rest.remove_prefix(part.size());
        rest_follows = next > 0 && reversed[--next] == part;
      }
      if (!rest_follows) continue;
      word.remove_suffix(first.size());
      run_together.push_back({std::string(word), std::string(name)});
      reversed.push_back(first);
      break;
    }
    reversed.push_back(word);
  }
  return {reversed.rbegin(), reversed.rend()};
}

// Header column names. TAB-separated: one column per non-empty field. Space-aligned: one per
// word, with the known multi-word names ("CPU Affinity", ...) re-joined. In both, a name run into
// an attribute name ("NIC3CPU Affinity") is split off and recorded.
HeaderTokens ReadHeaderTokens(std::string_view line) {
  HeaderTokens out;
  if (line.find('\t') != std::string_view::npos) {
    size_t start = 0;
    while (start <= line.size()) {
      size_t tab = line.find('\t', start);
      if (tab == std::string_view::npos) tab = line.size();
      const std::vector<std::string_view> words = SplitWhitespace(line.substr(start, tab - start));
      if (!words.empty()) SplitTabField(JoinWords(words, 0, words.size()), out);
      start = tab + 1;
    }
    return out;
  }
  const std::vector<std::string_view> words =
      SplitRunTogetherWords(SplitWhitespace(line), out.run_together);
  std::reverse(out.run_together.begin(), out.run_together.end());  // found last first
  for (size_t i = 0; i < words.size();) {
    size_t count = 1;
    for (std::string_view name : kAttributeColumns) {
      if (const size_t spelled = WordsSpelling(words, i, name); spelled > 0) {
        count = spelled;
        break;
      }
    }
    out.tokens.push_back(JoinWords(words, i, i + count));
    i += count;
  }
  return out;
}

// A non-negative decimal integer that fits an int, with nothing else around it.
std::optional<int> ParseNonNegative(std::string_view text) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0) return std::nullopt;
  return value;
}

constexpr std::string_view kGpuPrefix = "GPU";

// "GPU" followed by decimal digits only, whatever their value.
bool IsGpuLabel(std::string_view token) {
  if (token.size() <= kGpuPrefix.size() || !token.starts_with(kGpuPrefix)) return false;
  return std::all_of(token.begin() + kGpuPrefix.size(), token.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

// N of "GPU<N>" when it is a possible GPU number, 0..kMaxGpusPerNode-1; nullopt for other
// tokens and for labels past that range (GPU64, GPU4294967296).
std::optional<int> GpuNumber(std::string_view token) {
  if (!IsGpuLabel(token)) return std::nullopt;
  const std::optional<int> number = ParseNonNegative(token.substr(kGpuPrefix.size()));
  if (!number.has_value() || *number >= kMaxGpusPerNode) return std::nullopt;
  return number;
}

bool IsPrintable(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte >= 0x20 && byte < 0x7f;
}

bool IsPrintableAscii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), IsPrintable);
}

// Input text fit for a diagnostic: printable ASCII as is, other bytes as \xNN, cut to
// kMaxQuotedBytes.
std::string Quote(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string quoted = "'";
  for (size_t i = 0; i < text.size() && i < kMaxQuotedBytes; ++i) {
    if (IsPrintable(text[i])) {
      quoted += text[i];
    } else {
      const auto byte = static_cast<unsigned char>(text[i]);
      quoted += "\\x";
      quoted += kHex[byte >> 4];
      quoted += kHex[byte & 0xf];
    }
  }
  if (text.size() > kMaxQuotedBytes) quoted += "...";
  quoted += '\'';
  return quoted;
}

bool IsAttributeColumn(std::string_view name) {
  return std::find(std::begin(kAttributeColumns), std::end(kAttributeColumns), name) !=
         std::end(kAttributeColumns);
}

std::string LinePrefix(int line_number) { return "line " + std::to_string(line_number) + ": "; }

// The header is the line whose first column is a GPU label and which holds no cell values.
bool IsHeader(const std::vector<std::string>& tokens) {
  if (tokens.empty() || !IsGpuLabel(tokens.front())) return false;
  return std::none_of(tokens.begin(), tokens.end(), [](const std::string& token) {
    return token == "X" || ParseLink(token).has_value();
  });
}

Result<Header> BuildHeader(std::string_view line, const HeaderTokens& header_tokens,
                           Diagnostics& diagnostics) {
  Header header;
  header.line = Trim(line);
  for (const RunTogether& run : header_tokens.run_together) {
    diagnostics.Add("header: " + Quote(run.prefix) + " runs into '" + run.name +
                    "'; read as two columns");
  }
  const std::vector<std::string>& tokens = header_tokens.tokens;
  header.attributes_begin = tokens.size();
  std::vector<int> numbers;  // of the GPU columns, in column order
  bool attributes_started = false;
  for (const std::string& token : tokens) {
    Column column{token, ColumnRole::kOther, -1};
    const std::optional<int> number = GpuNumber(token);
    if (IsAttributeColumn(token)) {
      // Attributes follow the GPU and NIC columns. A repeated one is ignored.
      if (!attributes_started) header.attributes_begin = header.columns.size();
      attributes_started = true;
      if (token == kCpuAffinityName && !header.has_cpu_affinity) {
        header.has_cpu_affinity = true;
        column.role = ColumnRole::kCpuAffinity;
      } else if (token == kNumaAffinityName && !header.has_numa_affinity) {
        header.has_numa_affinity = true;
        column.role = ColumnRole::kNumaAffinity;
      }
    } else if (attributes_started) {
      // An attribute this parser does not know; ignored.
    } else if (IsGpuLabel(token)) {
      if (number.has_value() &&
          std::find(numbers.begin(), numbers.end(), *number) != numbers.end()) {
        diagnostics.Add("header: column " + token + " repeated; the second one is ignored");
      } else if (numbers.size() == static_cast<size_t>(kMaxGpusPerNode)) {
        return InvalidArgument("nvidia-smi header has more than " +
                               std::to_string(kMaxGpusPerNode) + " GPU columns");
      } else if (!number.has_value()) {
        // Dropping the column would shrink the GPU count; a wrong count is worse than none.
        return InvalidArgument("nvidia-smi header column " + Quote(token) +
                               " is not a GPU number: GPUs are numbered 0.." +
                               std::to_string(kMaxGpusPerNode - 1));
      } else {
        column.role = ColumnRole::kGpu;
        numbers.push_back(*number);
      }
    } else if (IsPrintableAscii(token)) {
      column.role = ColumnRole::kNic;
    } else {
      diagnostics.Add("header: column " + Quote(token) + " is not a readable name; ignored");
    }
    header.columns.push_back(std::move(column));
  }
  // GPU<N> is GPU index N when the columns are GPU0..GPU<n-1> in any order; otherwise GPUs are
  // numbered by ascending N.
  std::vector<int> sorted = numbers;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty() && sorted.back() != static_cast<int>(sorted.size()) - 1) {
    diagnostics.Add("header: GPU columns are not GPU0..GPU" + std::to_string(sorted.size() - 1) +
                    "; GPUs are numbered by ascending column number");
  }
  header.gpu_names.resize(sorted.size());
  for (size_t i = 0; i < sorted.size(); ++i) {
    header.gpu_by_number[sorted[i]] = static_cast<int>(i);
    header.gpu_names[i] = "GPU" + std::to_string(sorted[i]);
  }
  for (Column& column : header.columns) {
    if (column.role == ColumnRole::kGpu) column.gpu = header.gpu_by_number[*GpuNumber(column.name)];
  }
  return header;
}

// NUMA Affinity cell: an id, "N/A" (unknown), or something unreadable (unknown, diagnosed).
int ReadNumaCell(std::string_view cell, const std::string& row_name, int line_number,
                 Diagnostics& diagnostics) {
  if (cell == "N/A") return -1;
  const std::optional<int> id = ParseNonNegative(cell);
  if (!id.has_value() || *id > kMaxNumaNode) {
    diagnostics.Add(LinePrefix(line_number) + "row " + row_name + ": NUMA Affinity " + Quote(cell) +
                    " is not a NUMA node id; NUMA node unknown");
    return -1;
  }
  return *id;
}

// Reads the cells of GPU `gpu`'s row, `cells` being the words after the row label.
GpuRow ReadGpuRow(const Header& header, int gpu, const std::vector<std::string_view>& cells,
                  int line_number, Diagnostics& diagnostics) {
  const std::string& row_name = header.gpu_names[static_cast<size_t>(gpu)];
  GpuRow row;
  row.read = true;
  row.links.resize(header.gpu_names.size());
  // More cells than columns: the header lost a column, typically two NIC names run together
  // ("NIC8NIC9"). The GPU columns come first and are read from the start of the row; the
  // attribute columns come last and are read from its end, so they do not shift onto NIC cells.
  // Fewer cells: a truncated row, read from the start.
  const size_t columns = header.columns.size();
  const bool has_attributes = header.attributes_begin < columns;
  const size_t shift = cells.size() > columns && has_attributes ? cells.size() - columns : 0;
  if (cells.size() != columns) {
    std::string line = LinePrefix(line_number) + "row " + row_name + " has " +
                       std::to_string(cells.size()) + " cells, the header " +
                       std::to_string(columns);
    if (cells.size() < columns) {
      line += "; missing cells are unknown";
    } else if (shift > 0) {
      // Only the known names: others may be long or unprintable.
      std::string names;
      for (size_t c = header.attributes_begin; c < columns; ++c) {
        const std::string& name = header.columns[c].name;
        if (IsAttributeColumn(name)) names += (names.empty() ? "" : ", ") + name;
      }
      line += " (names run together in the header?); reading " + names +
              " from the end of the row; the extra cells are ignored";
    } else {
      line += "; extra cells are ignored";
    }
    diagnostics.Add(std::move(line));
  }
  for (size_t c = 0; c < columns; ++c) {
    const size_t index = c < header.attributes_begin ? c : c + shift;
    if (index >= cells.size()) break;
    const Column& column = header.columns[c];
    const std::string_view cell = cells[index];
    switch (column.role) {
      case ColumnRole::kGpu: {
        if (column.gpu == gpu) {
          if (cell != "X") {
            diagnostics.Add(LinePrefix(line_number) + "row " + row_name + ": expected X for " +
                            "itself, found " + Quote(cell));
          }
          break;
        }
        std::optional<Link> link = cell == "X" ? std::nullopt : ParseLink(cell);
        if (!link.has_value()) {
          diagnostics.Add(LinePrefix(line_number) + "row " + row_name + ", column " + column.name +
                          ": cannot read " + Quote(cell) + "; link unknown");
        }
        row.links[static_cast<size_t>(column.gpu)] = link;
        break;
      }
      case ColumnRole::kCpuAffinity:
        if (!IsPrintableAscii(cell)) {
          diagnostics.Add(LinePrefix(line_number) + "row " + row_name + ": CPU Affinity " +
                          Quote(cell) + " is not readable; ignored");
        } else if (cell != "N/A") {
          row.cpu_affinity = std::string(cell);
        }
        break;
      case ColumnRole::kNumaAffinity:
        row.numa_node = ReadNumaCell(cell, row_name, line_number, diagnostics);
        break;
      case ColumnRole::kNic:
      case ColumnRole::kOther:
        break;
    }
  }
  return row;
}

// Sets each pair from the rows that name it; the weaker link when they disagree.
void ResolveLinks(const Header& header, const std::vector<GpuRow>& rows, MachineTopology& machine,
                  Diagnostics& diagnostics) {
  const int n = machine.gpu_count();
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const std::optional<Link>& ab = rows[static_cast<size_t>(a)].links[static_cast<size_t>(b)];
      const std::optional<Link>& ba = rows[static_cast<size_t>(b)].links[static_cast<size_t>(a)];
      if (ab.has_value() && ba.has_value() && !(*ab == *ba)) {
        const Link& weaker = LinkWeight(*ba) < LinkWeight(*ab) ? *ba : *ab;
        const std::string& name_a = header.gpu_names[static_cast<size_t>(a)];
        const std::string& name_b = header.gpu_names[static_cast<size_t>(b)];
        diagnostics.Add(name_a + "-" + name_b + ": row " + name_a + " says " + FormatLink(*ab) +
                        ", row " + name_b + " says " + FormatLink(*ba) + "; keeping the weaker " +
                        FormatLink(weaker));
        machine.SetLink(a, b, weaker);
      } else if (ab.has_value() || ba.has_value()) {
        machine.SetLink(a, b, ab.has_value() ? *ab : *ba);
      }
    }
  }
}

// NUMA Affinity when the header has it; else GPUs sharing a CPU affinity share a NUMA node,
// numbered in order of first appearance, and a diagnostic says so.
void AssignNuma(const Header& header, const std::vector<GpuRow>& rows, MachineTopology& machine,
                Diagnostics& diagnostics) {
  std::map<std::string, int, std::less<>> id_of_affinity;
  for (int g = 0; g < machine.gpu_count(); ++g) {
    const GpuRow& row = rows[static_cast<size_t>(g)];
    GpuInfo& gpu = machine.gpu(g);
    gpu.cpu_affinity = row.cpu_affinity;
    if (!row.read) continue;
    if (header.has_numa_affinity) {
      gpu.numa_node = row.numa_node;
    } else if (!row.cpu_affinity.empty()) {
      const int next_id = static_cast<int>(id_of_affinity.size());
      gpu.numa_node = id_of_affinity.try_emplace(row.cpu_affinity, next_id).first->second;
    }
  }
  if (!id_of_affinity.empty()) {
    diagnostics.Add(
        "no NUMA Affinity column: NUMA node ids are derived from CPU Affinity (GPUs with the same "
        "CPU affinity share an id, numbered from 0 in order of first appearance), not read from "
        "the machine");
  }
}

// Whether any pair is NVLinked.
bool HasNvLink(const MachineTopology& machine) {
  for (int a = 0; a < machine.gpu_count(); ++a) {
    for (int b = a + 1; b < machine.gpu_count(); ++b) {
      if (machine.link(a, b).IsNvLink()) return true;
    }
  }
  return false;
}

}  // namespace

Result<NvidiaSmiTopology> ParseNvidiaSmiTopo(std::string_view text) {
  // A UTF-8 byte order mark, as some editors and Windows tools save text.
  constexpr std::string_view kUtf8Bom = "\xef\xbb\xbf";
  if (text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());

  Diagnostics diagnostics;
  std::optional<Header> header;
  std::vector<GpuRow> rows;
  // `nvidia-smi topo -m` ends its legend with an "NV#" line; `topo -mp` (PCIe paths only) has
  // none.
  bool legend_seen = false;
  bool legend_has_nvlink = false;
  int line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t newline = text.find('\n', start);
    if (newline == std::string_view::npos) newline = text.size();
    const std::string_view line = text.substr(start, newline - start);
    start = newline + 1;
    ++line_number;

    const std::string_view trimmed = Trim(line);
    if (trimmed == "Legend:") legend_seen = true;
    if (legend_seen && trimmed.starts_with("NV#")) legend_has_nvlink = true;

    if (!header.has_value()) {
      const HeaderTokens tokens = ReadHeaderTokens(line);
      if (!IsHeader(tokens.tokens)) continue;  // text before the matrix
      Result<Header> built = BuildHeader(line, tokens, diagnostics);
      if (!built.ok()) return built.status();
      header = std::move(built).value();
      rows.assign(header->gpu_names.size(), GpuRow{});
      for (GpuRow& row : rows) row.links.resize(rows.size());
      continue;
    }
    if (trimmed == header->line) {
      diagnostics.Add(LinePrefix(line_number) + "the header repeats; the rest is ignored");
      break;
    }
    const std::vector<std::string_view> words = SplitWhitespace(line);
    if (words.empty()) continue;
    if (!IsGpuLabel(words.front())) continue;  // NIC rows, legends, other text
    const std::optional<int> number = GpuNumber(words.front());
    if (!number.has_value()) {
      diagnostics.Add(LinePrefix(line_number) + "row " + Quote(words.front()) +
                      " is not a GPU number (0.." + std::to_string(kMaxGpusPerNode - 1) +
                      "); ignored");
      continue;
    }
    const auto it = header->gpu_by_number.find(*number);
    if (it == header->gpu_by_number.end()) {
      diagnostics.Add(LinePrefix(line_number) + "row " + std::string(words.front()) +
                      " has no column in the header; ignored");
      continue;
    }
    const int gpu = it->second;
    if (rows[static_cast<size_t>(gpu)].read) {
      diagnostics.Add(LinePrefix(line_number) + "row " + std::string(words.front()) +
                      " repeated; the first one is kept");
      continue;
    }
    const std::vector<std::string_view> cells(words.begin() + 1, words.end());
    rows[static_cast<size_t>(gpu)] = ReadGpuRow(*header, gpu, cells, line_number, diagnostics);
  }
  if (!header.has_value()) {
    return InvalidArgument("no nvidia-smi topo -m header (a line of GPU0 GPU1 ... columns)");
  }

  NvidiaSmiTopology result;
  result.machine = MachineTopology(static_cast<int>(header->gpu_names.size()));
  for (const Column& column : header->columns) {
    if (column.role == ColumnRole::kNic) result.nics.push_back(column.name);
  }
  for (size_t g = 0; g < rows.size(); ++g) {
    if (!rows[g].read) {
      diagnostics.Add("row " + header->gpu_names[g] +
                      " missing: its links to GPUs without rows are unknown, NUMA node unknown");
    }
  }
  ResolveLinks(*header, rows, result.machine, diagnostics);
  AssignNuma(*header, rows, result.machine, diagnostics);
  if (legend_seen && !legend_has_nvlink && !HasNvLink(result.machine)) {
    diagnostics.Add(
        "the legend has no NV# line: this looks like `nvidia-smi topo -mp` output, which shows "
        "PCIe paths only; NVLinks are not shown, so GPUs may be NVLinked although their links "
        "read as PCIe (capture `nvidia-smi topo -m` to see them)");
  }
  result.diagnostics = std::move(diagnostics).Take();
  return result;
}

}  // namespace gputopo::topology

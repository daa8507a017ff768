#include "src/observability/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <utility>

namespace gputopo::observability {
namespace {

constexpr std::string_view kCounterSuffix = "_total";
constexpr std::array<std::string_view, 3> kHistogramSuffixes = {"_bucket", "_sum", "_count"};

// A registration or WithLabels() mistake: see "Registration errors" in the header.
[[noreturn]] void Die(std::string_view what) {
  std::fprintf(stderr, "gputopo metrics: fatal programming error: %.*s\n",
               static_cast<int>(what.size()), what.data());
  std::abort();
}

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Label values: backslash, double quote and line feed are escaped.
void AppendLabelValue(std::string_view value, std::string& out) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

// HELP text: backslash and line feed are escaped.
void AppendHelp(std::string_view help, std::string& out) {
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

// Shortest round-trip digits, in fixed notation for exponents -5..20 ("0.0001", "0.25", "10",
// "1000000") and scientific beyond ("1e-07", "1e+21"): readable, stable `le` labels, and all of
// it accepted by Prometheus (Go's ParseFloat).
void AppendDouble(double value, std::string& out) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buffer[64];
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  if (ec != std::errc()) return;
  const char* e = std::find(buffer, end, 'e');
  int exponent = 0;
  if (e != end) std::from_chars(e + 1 + (e[1] == '+'), end, exponent);
  if (exponent >= -5 && exponent <= 20) {
    auto fixed = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed);
    if (fixed.ec != std::errc()) return;
    end = fixed.ptr;
  }
  out.append(buffer, end);
}

void AppendUint(uint64_t value, std::string& out) {
  char buffer[24];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, ec == std::errc() ? end : buffer);
}

std::string FormatDouble(double value) {
  std::string out;
  AppendDouble(value, out);
  return out;
}

// `name{labels} value\n`, or `name value\n` without labels. `extra` is one more label
// (`le="..."`), appended after `labels`.
void AppendSample(std::string_view name, std::string_view suffix, std::string_view labels,
                  std::string_view extra, std::string& out) {
  out.append(name).append(suffix);
  if (!labels.empty() || !extra.empty()) {
    out += '{';
    out.append(labels);
    if (!labels.empty() && !extra.empty()) out += ',';
    out.append(extra);
    out += '}';
  }
  out += ' ';
}

void AppendHeader(std::string_view name, std::string_view help, MetricType type, std::string& out) {
  out.append("# HELP ").append(name).append(" ");
  AppendHelp(help, out);
  out.append("\n# TYPE ").append(name).append(" ").append(MetricTypeName(type)).append("\n");
}

template <typename A, typename B>
bool LexicographicLess(std::span<A> a, std::span<B> b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [](std::string_view x, std::string_view y) { return x < y; });
}

Status CheckLabelNames(const std::vector<std::string>& names, MetricType type) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (!IsValidLabelName(names[i])) {
      return InvalidArgument("invalid label name \"" + names[i] + "\"");
    }
    if (type == MetricType::kHistogram && names[i] == "le") {
      return InvalidArgument("the label name \"le\" is reserved for histogram buckets");
    }
    for (size_t j = 0; j < i; ++j) {
      if (names[i] == names[j]) return InvalidArgument("repeated label name \"" + names[i] + "\"");
    }
  }
  return Status::Ok();
}

Result<std::vector<double>> CheckBounds(std::span<const double> bounds) {
  std::vector<double> out(bounds.begin(), bounds.end());
  if (!out.empty() && out.back() == std::numeric_limits<double>::infinity()) out.pop_back();
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) {
      return InvalidArgument("bucket bound " + FormatDouble(out[i]) + " is not finite");
    }
    if (i > 0 && !(out[i - 1] < out[i])) {
      return InvalidArgument("bucket bounds are not strictly increasing at " +
                             FormatDouble(out[i]));
    }
  }
  return out;
}

// The sample names a family exposes.
std::vector<std::string> SampleNames(std::string_view name, MetricType type) {
  std::vector<std::string> names;
  if (type == MetricType::kHistogram) {
    for (std::string_view suffix : kHistogramSuffixes) {
      names.push_back(std::string(name) + std::string(suffix));
    }
  } else {
    names.emplace_back(name);
  }
  return names;
}

std::vector<std::string> LeTexts(std::span<const double> bounds) {
  std::vector<std::string> texts;
  texts.reserve(bounds.size() + 1);
  for (double bound : bounds) {
    std::string text = "le=\"";
    AppendDouble(bound, text);
    text += '"';
    texts.push_back(std::move(text));
  }
  texts.push_back("le=\"+Inf\"");
  return texts;
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty() || !(IsNameStart(name[0]) || name[0] == ':')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsNameStart(c) || IsDigit(c) || c == ':'; });
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || !IsNameStart(name[0]) || name.starts_with("__")) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return IsNameStart(c) || IsDigit(c); });
}

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// --- Histogram ---

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds), buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds.size() + 1)) {}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  // The first bound >= value: buckets are inclusive upper bounds; past the end is +Inf.
  const size_t index = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                           bounds_.begin());
  buckets_[index].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot snapshot;
  snapshot.cumulative.reserve(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    snapshot.cumulative.push_back(total);
  }
  snapshot.count = total;
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

// --- Families ---

namespace internal {

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)) {}

std::string FamilyBase::LabelText(std::span<const std::string> values) const {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += ',';
    text.append(label_names_[i]).append("=\"");
    AppendLabelValue(values[i], text);
    text += '"';
  }
  return text;
}

bool LabelValuesLess::operator()(std::span<const std::string> a,
                                 std::span<const std::string> b) const {
  return LexicographicLess(a, b);
}
bool LabelValuesLess::operator()(std::span<const std::string> a,
                                 std::span<const std::string_view> b) const {
  return LexicographicLess(a, b);
}
bool LabelValuesLess::operator()(std::span<const std::string_view> a,
                                 std::span<const std::string> b) const {
  return LexicographicLess(a, b);
}

}  // namespace internal

template <typename Child>
MetricFamily<Child>::MetricFamily(std::string name, std::string help, MetricType type,
                                  std::vector<std::string> label_names, std::vector<double> bounds)
    : FamilyBase(std::move(name), std::move(help), type, std::move(label_names)),
      bounds_(std::move(bounds)),
      le_text_(type == MetricType::kHistogram ? LeTexts(bounds_) : std::vector<std::string>()) {}

template <typename Child>
Child& MetricFamily<Child>::WithLabels(std::span<const std::string_view> values) {
  return FindOrCreate(values);
}

template <typename Child>
Child& MetricFamily<Child>::WithLabels(const std::vector<std::string>& values) {
  return FindOrCreate(std::span<const std::string>(values));
}

template <typename Child>
template <typename Values>
Child& MetricFamily<Child>::FindOrCreate(const Values& values) {
  if (values.size() != label_names().size()) {
    Die("metric " + name() + " has " + std::to_string(label_names().size()) +
        " label(s) but WithLabels() got " + std::to_string(values.size()) + " value(s)");
  }
  {
    std::shared_lock lock(mutex_);
    auto it = children_.find(values);
    if (it != children_.end()) return *it->second.child;
  }
  std::vector<std::string> key(values.begin(), values.end());
  std::string label_text = LabelText(key);
  std::unique_lock lock(mutex_);
  auto [it, inserted] = children_.try_emplace(std::move(key));
  if (inserted) {
    it->second.label_text = std::move(label_text);
    if constexpr (std::is_same_v<Child, Histogram>) {
      it->second.child.reset(new Histogram(bounds_));
    } else {
      it->second.child.reset(new Child());
    }
  }
  return *it->second.child;
}

template <typename Child>
bool MetricFamily<Child>::RenderSamples(std::string& out) const {
  std::shared_lock lock(mutex_);
  if (children_.empty()) return false;
  for (const auto& [values, entry] : children_) {
    if constexpr (std::is_same_v<Child, Histogram>) {
      const Histogram::Snapshot snapshot = entry.child->Read();
      for (size_t i = 0; i < snapshot.cumulative.size(); ++i) {
        AppendSample(name(), "_bucket", entry.label_text, le_text_[i], out);
        AppendUint(snapshot.cumulative[i], out);
        out += '\n';
      }
      AppendSample(name(), "_sum", entry.label_text, {}, out);
      AppendDouble(snapshot.sum, out);
      out += '\n';
      AppendSample(name(), "_count", entry.label_text, {}, out);
      AppendUint(snapshot.count, out);
      out += '\n';
    } else {
      AppendSample(name(), {}, entry.label_text, {}, out);
      AppendDouble(entry.child->Value(), out);
      out += '\n';
    }
  }
  return true;
}

template class MetricFamily<Counter>;
template class MetricFamily<Gauge>;
template class MetricFamily<Histogram>;

// --- MetricsWriter ---

void MetricsWriter::WriteGauge(std::string_view name, std::string_view help,
                               std::span<const Label> labels, double value) {
  Write(MetricType::kGauge, name, help, labels, value);
}

void MetricsWriter::WriteCounter(std::string_view name, std::string_view help,
                                 std::span<const Label> labels, double value) {
  Write(MetricType::kCounter, name, help, labels, value);
}

void MetricsWriter::Write(MetricType type, std::string_view name, std::string_view help,
                          std::span<const Label> labels, double value) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    if (!IsValidMetricName(name) ||
        (type == MetricType::kCounter && !name.ends_with(kCounterSuffix)) ||
        registry_.IsNameTaken(name)) {
      ++dropped_;
      return;
    }
  } else if (it->second.type != type) {
    ++dropped_;
    return;
  }
  std::string text;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (!IsValidLabelName(labels[i].name)) {
      ++dropped_;
      return;
    }
    for (size_t j = 0; j < i; ++j) {
      if (labels[i].name == labels[j].name) {
        ++dropped_;
        return;
      }
    }
    if (i > 0) text += ',';
    text.append(labels[i].name).append("=\"");
    AppendLabelValue(labels[i].value, text);
    text += '"';
  }
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{type, std::string(help), {}}).first;
  }
  it->second.samples.emplace_back(std::move(text), value);
}

// --- MetricsRegistry ---

MetricsRegistry::~MetricsRegistry() = default;

bool MetricsRegistry::IsNameTaken(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return families_.contains(name) || sample_names_.contains(name);
}

template <typename Child>
Result<MetricFamily<Child>*> MetricsRegistry::Register(MetricType type, std::string_view name,
                                                       std::string_view help,
                                                       std::vector<std::string> label_names,
                                                       std::span<const double> bounds) {
  if (!IsValidMetricName(name)) {
    return InvalidArgument("invalid metric name \"" + std::string(name) + "\"");
  }
  if (type == MetricType::kCounter && !name.ends_with(kCounterSuffix)) {
    return InvalidArgument("counter name \"" + std::string(name) + "\" does not end in _total");
  }
  if (Status s = CheckLabelNames(label_names, type); !s.ok()) {
    return s.WithContext("metric " + std::string(name));
  }
  std::vector<double> checked_bounds;
  if (type == MetricType::kHistogram) {
    Result<std::vector<double>> checked = CheckBounds(bounds);
    if (!checked.ok()) return checked.status().WithContext("histogram " + std::string(name));
    checked_bounds = std::move(checked).value();
  }

  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = families_.find(name); it != families_.end()) {
    internal::FamilyBase& existing = *it->second;
    if (existing.type() != type) {
      return Status(StatusCode::kAlreadyExists, "metric " + std::string(name) +
                                                    " is registered as a " +
                                                    std::string(MetricTypeName(existing.type())));
    }
    auto& family = static_cast<MetricFamily<Child>&>(existing);
    if (family.label_names() != label_names) {
      return Status(StatusCode::kAlreadyExists,
                    "metric " + std::string(name) + " is registered with other label names");
    }
    if (!std::equal(family.bounds().begin(), family.bounds().end(), checked_bounds.begin(),
                    checked_bounds.end())) {
      return Status(StatusCode::kAlreadyExists,
                    "histogram " + std::string(name) + " is registered with other bucket bounds");
    }
    return &family;
  }
  std::vector<std::string> sample_names = SampleNames(name, type);
  for (const std::string& sample_name : sample_names) {
    if (sample_names_.contains(sample_name) || families_.contains(sample_name)) {
      return Status(StatusCode::kAlreadyExists, "metric " + std::string(name) +
                                                    ": the sample name " + sample_name +
                                                    " is used by another family");
    }
  }
  const bool unlabelled = label_names.empty();
  auto* family = new MetricFamily<Child>(std::string(name), std::string(help), type,
                                         std::move(label_names), std::move(checked_bounds));
  families_.emplace(std::string(name), std::unique_ptr<internal::FamilyBase>(family));
  sample_names_.insert(std::make_move_iterator(sample_names.begin()),
                       std::make_move_iterator(sample_names.end()));
  if (unlabelled) family->WithLabels({});
  return family;
}

Result<CounterFamily*> MetricsRegistry::TryRegisterCounter(std::string_view name,
                                                           std::string_view help,
                                                           std::vector<std::string> label_names) {
  return Register<Counter>(MetricType::kCounter, name, help, std::move(label_names), {});
}

Result<GaugeFamily*> MetricsRegistry::TryRegisterGauge(std::string_view name, std::string_view help,
                                                       std::vector<std::string> label_names) {
  return Register<Gauge>(MetricType::kGauge, name, help, std::move(label_names), {});
}

Result<HistogramFamily*> MetricsRegistry::TryRegisterHistogram(std::string_view name,
                                                               std::string_view help,
                                                               std::vector<std::string> label_names,
                                                               std::span<const double> bounds) {
  return Register<Histogram>(MetricType::kHistogram, name, help, std::move(label_names), bounds);
}

CounterFamily& MetricsRegistry::RegisterCounter(std::string_view name, std::string_view help,
                                                std::vector<std::string> label_names) {
  Result<CounterFamily*> family = TryRegisterCounter(name, help, std::move(label_names));
  if (!family.ok()) Die(family.status().ToString());
  return **family;
}

GaugeFamily& MetricsRegistry::RegisterGauge(std::string_view name, std::string_view help,
                                            std::vector<std::string> label_names) {
  Result<GaugeFamily*> family = TryRegisterGauge(name, help, std::move(label_names));
  if (!family.ok()) Die(family.status().ToString());
  return **family;
}

HistogramFamily& MetricsRegistry::RegisterHistogram(std::string_view name, std::string_view help,
                                                    std::vector<std::string> label_names,
                                                    std::span<const double> bounds) {
  Result<HistogramFamily*> family =
      TryRegisterHistogram(name, help, std::move(label_names), bounds);
  if (!family.ok()) Die(family.status().ToString());
  return **family;
}

void MetricsRegistry::AddCollector(Collector collector) {
  if (!collector) return;
  std::lock_guard<std::mutex> lock(mutex_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::Render() const {
  std::vector<Collector> collectors;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    collectors = collectors_;
  }
  MetricsWriter writer(*this);
  for (const Collector& collector : collectors) collector(writer);

  std::string out;
  out.reserve(4096);
  std::lock_guard<std::mutex> lock(mutex_);
  auto registered = families_.begin();
  auto collected = writer.families_.begin();
  while (registered != families_.end() || collected != writer.families_.end()) {
    if (collected == writer.families_.end() ||
        (registered != families_.end() && registered->first < collected->first)) {
      const internal::FamilyBase& family = *registered->second;
      const size_t start = out.size();
      AppendHeader(family.name(), family.help(), family.type(), out);
      if (!family.RenderSamples(out)) out.resize(start);
      ++registered;
      continue;
    }
    auto& [name, family] = *collected;
    ++collected;
    // Registered during the collectors' run: the registered family wins.
    if (families_.contains(name) || sample_names_.contains(name)) continue;
    // Sorted by labels; a repeated label set keeps its first value.
    std::stable_sort(family.samples.begin(), family.samples.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    AppendHeader(name, family.help, family.type, out);
    for (size_t i = 0; i < family.samples.size(); ++i) {
      const auto& [labels, value] = family.samples[i];
      if (i > 0 && family.samples[i - 1].first == labels) continue;
      AppendSample(name, {}, labels, {}, out);
      AppendDouble(value, out);
      out += '\n';
    }
  }
  return out;
}

}  // namespace gputopo::observability

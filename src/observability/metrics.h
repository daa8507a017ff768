// Metrics: a small registry of counters, gauges and histograms, rendered in the Prometheus text
// exposition format 0.0.4 for a /metrics endpoint.
//
// A MetricsRegistry is an ordinary object (no global default registry): the application owns
// one and passes it by reference to whatever records metrics. It owns metric *families*
// (a name, help text, label names and a type); a family hands out *children*, one per tuple of
// label values, through WithLabels(). Children live as long as the registry and never move, so
// a caller looks a child up once and keeps the reference:
//
//   MetricsRegistry registry;
//   Histogram& filter_latency =
//       registry.RegisterHistogram("gputopo_request_duration_seconds", "Extender request latency.",
//                                  {"verb"})
//           .WithLabels({"filter"});
//   ...
//   filter_latency.Observe(0.0012);  // lock-free
//
// Values that are cheaper to compute at scrape time (free GPU slots per node from the current
// snapshot) come from collectors: AddCollector() registers a callback that writes samples into
// a MetricsWriter during every Render().
//
// Registration errors. Metric names, label names and label counts are constants of the calling
// code, so a mistake in them is a programming error. Register*() abort the process with a
// message naming the problem (in every build: a malformed exposition would make Prometheus
// reject the whole scrape, and the first test that builds the registry finds the mistake).
// TryRegister*() return the same checks as a Status for code that builds names at run time.
// Registering a name again returns the existing family when the type, the label names and (for
// histograms) the bucket bounds match; the help text of the first registration wins.
// WithLabels() with the wrong number of values aborts too. Collectors cannot abort: a sample a
// collector writes with an invalid name, or under a name a registered family already uses, is
// dropped (see MetricsWriter::dropped()).
//
// Cost. Counter::Inc, Gauge::Set/Inc/Dec and Histogram::Observe are lock-free: relaxed atomic
// operations on the child (a histogram: one bucket counter and the sum). WithLabels() takes a
// shared lock and compares label values; creating a new child takes an exclusive lock on its
// family. Render() locks the registry and, in turn, each family (shared), so it never blocks
// the hot path.
//
// Thread safety: thread-safe. Every method of MetricsRegistry, the families and the children may
// be called concurrently. Collector callbacks may run concurrently with each other when
// Render() is called from several threads, so they must be thread-safe themselves.
#ifndef GPUTOPO_SRC_OBSERVABILITY_METRICS_H_
#define GPUTOPO_SRC_OBSERVABILITY_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/status.h"

namespace gputopo::observability {

// The Content-Type of Render()'s output, for the HTTP response.
inline constexpr std::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Latency buckets for extender requests, in seconds: 100us .. 10s.
inline constexpr std::array<double, 16> kDefaultLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved for Prometheus).
bool IsValidLabelName(std::string_view name);

enum class MetricType : uint8_t { kCounter, kGauge, kHistogram };
std::string_view MetricTypeName(MetricType type);  // "counter", "gauge", "histogram"

// Children are cache-line aligned, so that threads updating different children of a family
// (filter and bind latency, say) do not slow each other down by sharing a line.
inline constexpr size_t kChildAlignment = 64;

// A monotonically increasing value. Lock-free.
class alignas(kChildAlignment) Counter {
 public:
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds `amount`. A negative or NaN amount is ignored: a counter never decreases.
  void Inc(double amount = 1.0) {
    if (!(amount >= 0.0)) return;
    value_.fetch_add(amount, std::memory_order_relaxed);
  }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  template <typename Child>
  friend class MetricFamily;
  Counter() = default;

  std::atomic<double> value_{0.0};
  static_assert(std::atomic<double>::is_always_lock_free);
};

// A value that goes up and down. Lock-free.
class alignas(kChildAlignment) Gauge {
 public:
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Inc(double amount = 1.0) { value_.fetch_add(amount, std::memory_order_relaxed); }
  void Dec(double amount = 1.0) { value_.fetch_sub(amount, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  template <typename Child>
  friend class MetricFamily;
  Gauge() = default;

  std::atomic<double> value_{0.0};
};

// Observations counted into buckets with fixed upper bounds (`le`, inclusive), plus their sum.
// Lock-free. A scrape that races with Observe() may see the sum without the newest observation
// or the reverse; the count always equals the +Inf bucket, as the format requires.
class alignas(kChildAlignment) Histogram {
 public:
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Records `value` (seconds, for latency histograms). NaN is ignored.
  void Observe(double value);
  template <typename Rep, typename Period>
  void ObserveDuration(std::chrono::duration<Rep, Period> duration) {
    Observe(std::chrono::duration<double>(duration).count());
  }

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    uint64_t count = 0;                // == cumulative.back()
    double sum = 0.0;
  };
  Snapshot Read() const;
  std::span<const double> bounds() const { return bounds_; }

 private:
  template <typename Child>
  friend class MetricFamily;
  explicit Histogram(std::span<const double> bounds);

  const std::span<const double> bounds_;  // owned by the family; finite, increasing
  // Non-cumulative: buckets_[i] counts values in (bounds_[i-1], bounds_[i]]; the last is +Inf.
  const std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0.0};
};

namespace internal {

// What MetricsRegistry keeps of every family, whatever its child type.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // Appends the samples (no HELP/TYPE lines); returns false, appending nothing, when there are
  // none.
  virtual bool RenderSamples(std::string& out) const = 0;

 protected:
  // `name="value",...` for the label values, escaped; no braces.
  std::string LabelText(std::span<const std::string> values) const;

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
};

// Orders label-value tuples lexicographically; compares stored and looked-up tuples alike.
struct LabelValuesLess {
  using is_transparent = void;
  bool operator()(std::span<const std::string> a, std::span<const std::string> b) const;
  bool operator()(std::span<const std::string> a, std::span<const std::string_view> b) const;
  bool operator()(std::span<const std::string_view> a, std::span<const std::string> b) const;
};

}  // namespace internal

// The children of one metric name, one per tuple of label values.
template <typename Child>
class MetricFamily final : public internal::FamilyBase {
 public:
  // The child for `values`, one per label name, in the order of the label names; created on
  // first use. The reference stays valid for the registry's life. Aborts when the number of
  // values differs from the number of label names. Any bytes are allowed in values (they are
  // escaped when rendered); Prometheus expects UTF-8.
  Child& WithLabels(std::initializer_list<std::string_view> values) {
    return WithLabels(std::span<const std::string_view>(values.begin(), values.size()));
  }
  Child& WithLabels(std::span<const std::string_view> values);
  Child& WithLabels(const std::vector<std::string>& values);

  // Histogram families only: the bucket upper bounds, without +Inf.
  std::span<const double> bounds() const { return bounds_; }

  bool RenderSamples(std::string& out) const override;

 private:
  friend class MetricsRegistry;
  MetricFamily(std::string name, std::string help, MetricType type,
               std::vector<std::string> label_names, std::vector<double> bounds);

  struct Entry {
    std::string label_text;  // LabelText() of the key
    std::unique_ptr<Child> child;
  };
  template <typename Values>
  Child& FindOrCreate(const Values& values);

  const std::vector<double> bounds_;        // histograms only
  const std::vector<std::string> le_text_;  // bounds_ as rendered in le="...", then "+Inf"
  mutable std::shared_mutex mutex_;
  // GUARDED_BY(mutex_); ordered by label values, so Render() is deterministic.
  std::map<std::vector<std::string>, Entry, internal::LabelValuesLess> children_;
};

using CounterFamily = MetricFamily<Counter>;
using GaugeFamily = MetricFamily<Gauge>;
using HistogramFamily = MetricFamily<Histogram>;

class MetricsRegistry;

// One label of a collected sample.
struct Label {
  std::string_view name;
  std::string_view value;
};

// What a collector writes its samples into during Render(). Samples of one name form a family:
// HELP and TYPE come from its first sample; its samples are sorted by their labels, and a
// repeated label set keeps its first value. Invalid samples are dropped and counted: a bad
// metric or label name, a counter name without "_total", a name already written with another
// type, or a name a registered family uses (including a histogram's _bucket/_sum/_count).
//
// Thread safety: thread-compatible; each Render() uses its own writer.
class MetricsWriter {
 public:
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  void WriteGauge(std::string_view name, std::string_view help, std::span<const Label> labels,
                  double value);
  void WriteGauge(std::string_view name, std::string_view help, std::initializer_list<Label> labels,
                  double value) {
    WriteGauge(name, help, std::span<const Label>(labels.begin(), labels.size()), value);
  }
  // `name` must end in "_total".
  void WriteCounter(std::string_view name, std::string_view help, std::span<const Label> labels,
                    double value);
  void WriteCounter(std::string_view name, std::string_view help,
                    std::initializer_list<Label> labels, double value) {
    WriteCounter(name, help, std::span<const Label>(labels.begin(), labels.size()), value);
  }

  // Samples dropped so far.
  size_t dropped() const { return dropped_; }

 private:
  friend class MetricsRegistry;
  explicit MetricsWriter(const MetricsRegistry& registry) : registry_(registry) {}

  void Write(MetricType type, std::string_view name, std::string_view help,
             std::span<const Label> labels, double value);

  struct Family {
    MetricType type = MetricType::kGauge;
    std::string help;
    std::vector<std::pair<std::string, double>> samples;  // label text, value
  };
  const MetricsRegistry& registry_;
  std::map<std::string, Family, std::less<>> families_;
  size_t dropped_ = 0;
};

class MetricsRegistry {
 public:
  using Collector = std::function<void(MetricsWriter&)>;

  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;
  ~MetricsRegistry();

  // Registers a family, or returns the one registered under `name` (see the file comment).
  // Aborts on an invalid or conflicting registration. Counter names must end in "_total".
  // A family without labels has its single child from the start, so it renders 0 before the
  // first update.
  CounterFamily& RegisterCounter(std::string_view name, std::string_view help,
                                 std::vector<std::string> label_names = {});
  GaugeFamily& RegisterGauge(std::string_view name, std::string_view help,
                             std::vector<std::string> label_names = {});
  // `bounds`: finite and strictly increasing; a trailing +Inf is accepted and dropped (+Inf is
  // always added). The label name "le" is reserved.
  HistogramFamily& RegisterHistogram(std::string_view name, std::string_view help,
                                     std::vector<std::string> label_names = {},
                                     std::span<const double> bounds = kDefaultLatencyBuckets);

  // The same, returning kInvalidArgument (bad name, label or bounds) or kAlreadyExists (the name
  // is registered with another type, other labels or other bounds) instead of aborting.
  Result<CounterFamily*> TryRegisterCounter(std::string_view name, std::string_view help,
                                            std::vector<std::string> label_names = {});
  Result<GaugeFamily*> TryRegisterGauge(std::string_view name, std::string_view help,
                                        std::vector<std::string> label_names = {});
  Result<HistogramFamily*> TryRegisterHistogram(
      std::string_view name, std::string_view help, std::vector<std::string> label_names = {},
      std::span<const double> bounds = kDefaultLatencyBuckets);

  // Runs `collector` during every Render(), outside the registry's lock (it may register
  // families, but those show from the next Render()). Whatever it captures must outlive the
  // registry, or at least its last Render().
  void AddCollector(Collector collector);

  // The exposition text: families sorted by name (registered and collected merged), each with
  // "# HELP" and "# TYPE" lines, then its samples; families without samples are left out.
  std::string Render() const;

 private:
  friend class MetricsWriter;

  // Whether a registered family uses `name` as its name or a sample name.
  bool IsNameTaken(std::string_view name) const;

  template <typename Child>
  Result<MetricFamily<Child>*> Register(MetricType type, std::string_view name,
                                        std::string_view help, std::vector<std::string> label_names,
                                        std::span<const double> bounds);

  mutable std::mutex mutex_;
  // GUARDED_BY(mutex_). Families are never removed, so references to them stay valid.
  std::map<std::string, std::unique_ptr<internal::FamilyBase>, std::less<>> families_;
  // GUARDED_BY(mutex_). Every sample name registered families use (a histogram's three).
  std::set<std::string, std::less<>> sample_names_;
  std::vector<Collector> collectors_;  // GUARDED_BY(mutex_)
};

}  // namespace gputopo::observability

#endif  // GPUTOPO_SRC_OBSERVABILITY_METRICS_H_

// Metrics: Prometheus metrics through prometheus-cpp (Debian's prometheus-cpp-dev, core only),
// rendered in the text exposition format 0.0.4 for a /metrics endpoint.
//
// A MetricsRegistry is an ordinary object (no global default registry): the application owns
// one and passes it by reference to whatever records metrics. prometheus-cpp does the metrics,
// their thread safety and the text format; what this file adds is what gputopo's callers need
// on top of it:
// - families registered by name with their label *names*, children looked up by label values
//   in that order (WithLabels), so that a caller cannot misspell a label at the point of use;
// - a family without labels has its single child from the start, so it renders 0 before the
//   first update;
// - registering a name again returns the family already registered (the help text of the first
//   registration wins) when the type, the label names and (for histograms) the buckets match;
// - collectors: values cheaper to compute at scrape time (free GPU slots per node from the
//   current snapshot) are written by callbacks into a MetricsWriter during every Render();
// - deterministic output: families sorted by name, each family's samples by label values.
//
//   MetricsRegistry registry;
//   Histogram& filter_latency =
//       registry.RegisterHistogram("gputopo_request_duration_seconds", "Extender request latency.",
//                                  {"verb"})
//           .WithLabels({"filter"});
//   ...
//   filter_latency.Observe(0.0012);
//
// Registration errors. Metric names, label names and label counts are constants of the calling
// code, so a mistake in them is a programming error: Register*() and WithLabels() abort the
// process with a message naming the problem (in every build: a malformed exposition would make
// Prometheus reject the whole scrape, and the first test that builds the registry finds the
// mistake). Collectors cannot abort: a sample a collector writes with an invalid name, under a
// name a registered family uses, or under a name already written with another type, is dropped
// (MetricsWriter::dropped()).
//
// Thread safety: thread-safe. Every method of MetricsRegistry, the families and the children
// (prometheus-cpp's Counter, Gauge, Histogram) may be called concurrently. Collector callbacks
// may run concurrently with each other when Render() is called from several threads, so they
// must be thread-safe themselves.
#ifndef GPUTOPO_SRC_OBSERVABILITY_METRICS_H_
#define GPUTOPO_SRC_OBSERVABILITY_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <array>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/mutex.h"

namespace gputopo::observability {

// The Content-Type of Render()'s output, for the HTTP response.
inline constexpr std::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Latency buckets for extender requests, in seconds: 100us .. 10s.
inline constexpr std::array<double, 16> kDefaultLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};

using Counter = prometheus::Counter;
using Gauge = prometheus::Gauge;
using Histogram = prometheus::Histogram;

// The children of one metric name, one per tuple of label values.
template <typename Child>
class MetricFamily {
 public:
  // The child for `values`, one per label name, in the order of the label names; created on
  // first use. The reference stays valid for the registry's life. Aborts when the number of
  // values differs from the number of label names.
  Child& WithLabels(std::initializer_list<std::string_view> values) {
    return WithLabels(std::span<const std::string_view>(values.begin(), values.size()));
  }
  Child& WithLabels(std::span<const std::string_view> values);
  Child& WithLabels(const std::vector<std::string>& values);

  const std::vector<std::string>& label_names() const { return label_names_; }

 private:
  friend class MetricsRegistry;
  MetricFamily(prometheus::Family<Child>& family, std::vector<std::string> label_names,
               std::vector<double> bounds)
      : family_(family), label_names_(std::move(label_names)), bounds_(std::move(bounds)) {}

  prometheus::Family<Child>& family_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;  // histograms only
};

using CounterFamily = MetricFamily<Counter>;
using GaugeFamily = MetricFamily<Gauge>;
using HistogramFamily = MetricFamily<Histogram>;

// One label of a collected sample.
struct Label {
  std::string_view name;
  std::string_view value;
};

// What a collector writes its samples into during Render(). Samples of one name form a family:
// its help comes from its first sample, and a repeated label set keeps its first value.
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
  explicit MetricsWriter(const std::map<std::string, prometheus::MetricType, std::less<>>& taken)
      : taken_(taken) {}

  void Write(prometheus::MetricType type, std::string_view name, std::string_view help,
             std::span<const Label> labels, double value);

  // Registered families' names (and a histogram's _bucket/_sum/_count), with their types.
  const std::map<std::string, prometheus::MetricType, std::less<>>& taken_;
  std::map<std::string, prometheus::MetricFamily, std::less<>> families_;
  size_t dropped_ = 0;
};

class MetricsRegistry {
 public:
  using Collector = std::function<void(MetricsWriter&)>;

  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registers a family, or returns the one registered under `name` (see the file comment).
  // Aborts on an invalid or conflicting registration. Counter names must end in "_total".
  CounterFamily& RegisterCounter(std::string_view name, std::string_view help,
                                 std::vector<std::string> label_names = {});
  GaugeFamily& RegisterGauge(std::string_view name, std::string_view help,
                             std::vector<std::string> label_names = {});
  // `bounds`: finite and strictly increasing (+Inf is always added). The label name "le" is
  // reserved.
  HistogramFamily& RegisterHistogram(std::string_view name, std::string_view help,
                                     std::vector<std::string> label_names = {},
                                     std::span<const double> bounds = kDefaultLatencyBuckets);

  // Runs `collector` during every Render(). Whatever it captures must outlive the registry, or
  // at least its last Render().
  void AddCollector(Collector collector);

  // The exposition text: families sorted by name (registered and collected merged), each with
  // "# HELP" and "# TYPE" lines, then its samples sorted by label values; families without
  // samples are left out.
  std::string Render() const;

 private:
  struct Registered {
    prometheus::MetricType type;
    std::shared_ptr<void> family;  // the MetricFamily<Child> of `type`
  };
  template <typename Child>
  MetricFamily<Child>& Register(prometheus::MetricType type, std::string_view name,
                                std::string_view help, std::vector<std::string> label_names,
                                std::vector<double> bounds);

  prometheus::Registry registry_;
  mutable Mutex mutex_;
  std::map<std::string, Registered, std::less<>> registered_ GPUTOPO_GUARDED_BY(mutex_);
  // Every sample name registered families use (a histogram's three).
  std::map<std::string, prometheus::MetricType, std::less<>> taken_ GPUTOPO_GUARDED_BY(mutex_);
  std::vector<Collector> collectors_ GPUTOPO_GUARDED_BY(mutex_);
};

}  // namespace gputopo::observability

#endif  // GPUTOPO_SRC_OBSERVABILITY_METRICS_H_

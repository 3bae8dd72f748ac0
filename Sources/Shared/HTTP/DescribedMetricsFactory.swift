import Metrics
import Prometheus
import TributaryCoordinator

/// A swift-metrics backend that records into a Prometheus registry and registers each family with its HELP text
/// (``MetricNames/help``) and, for histograms, its buckets.
///
/// swift-prometheus' own `PrometheusMetricsFactory` registers every family with an empty help text, and its registry
/// stops the process when one name is registered with two help texts, so the text has to be given where the family
/// is made: here, through the registry's descriptor API. A label without a help text (none of Tributary's) is
/// registered without one.
struct DescribedMetricsFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    /// Buckets of the histograms that swift-metrics' `Timer`s make, by label.
    var durationBuckets: [String: [Duration]] = [:]
    /// Buckets of the histograms that aggregating `Recorder`s make, by label.
    var valueBuckets: [String: [Double]] = [:]
    /// Buckets of a duration histogram whose label is not in ``durationBuckets``.
    var defaultDurationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]
    /// Buckets of a value histogram whose label is not in ``valueBuckets``.
    var defaultValueBuckets: [Double] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]

    // MARK: - Making handlers

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: .described(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: .described(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: .described(label), labels: dimensions) }
        return registry.makeValueHistogram(
            descriptor: .described(label), labels: dimensions, buckets: valueBuckets[label] ?? defaultValueBuckets)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: .described(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(
            descriptor: .described(label), labels: dimensions,
            buckets: durationBuckets[label] ?? defaultDurationBuckets)
    }

    // MARK: - Destroying handlers

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}

extension MetricNameDescriptor {
    /// The metric `name` (whole, no unit appended) with its HELP text from ``MetricNames/help``: how every family
    /// of the coordinator is registered, so each name always comes with the same text.
    static func described(_ name: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: MetricNames.help[name] ?? "")
    }
}

//! OpenTelemetry: traces and metrics over OTLP/HTTP (protobuf), off
//! unless the standard environment asks for it — `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (or a per-signal `OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT`), with
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_BSP_*`,
//! `OTEL_TRACES_SAMPLER` read by the SDK as it documents them;
//! `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none` and
//! `OTEL_METRICS_EXPORTER=none` turn it (or one signal) off.
//!
//! What is recorded ([`span`]): a SERVER span per MCP request the server
//! handles, named and attributed per the MCP semantic conventions, whose
//! parent is the `traceparent` in the request's `params._meta`; a child
//! span per op (verb, decision, program, outcome, exit code); the
//! `mcp.server.operation.duration` histogram and a per-verb op counter.
//! Never an op's args or results, a token, or a program's output: spans
//! leave the machine, and args may hold what `audit` redacts.

mod client;
pub mod span;

use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{
    MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig,
};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use std::sync::OnceLock;
use std::time::Duration;

/// How long one export may take (the SDK retries within
/// `OTEL_EXPORTER_OTLP_TIMEOUT`).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The instruments and providers of a server that exports.
pub struct Telemetry {
    tracer: Option<SdkTracer>,
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    /// `mcp.server.operation.duration`, seconds, per MCP request.
    request_duration: Option<Histogram<f64>>,
    /// `verbgate.ops`, per verb and outcome.
    ops: Option<Counter<u64>>,
    /// `verbgate.op.duration`, seconds, per verb and outcome.
    op_duration: Option<Histogram<f64>>,
}

static ACTIVE: OnceLock<Telemetry> = OnceLock::new();

/// The running telemetry, if the environment turned it on.
pub fn active() -> Option<&'static Telemetry> {
    ACTIVE.get()
}

/// Which signals the environment asks for: (traces, metrics).
fn wanted(var: impl Fn(&str) -> Option<String>) -> (bool, bool) {
    let set = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return (false, false);
    }
    let base = set("OTEL_EXPORTER_OTLP_ENDPOINT");
    let off = |name: &str| var(name).is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    let traces =
        (base || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) && !off("OTEL_TRACES_EXPORTER");
    let metrics =
        (base || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")) && !off("OTEL_METRICS_EXPORTER");
    (traces, metrics)
}

/// Start exporting if the environment says so (call once, inside the
/// runtime, before serving); whether it did. Only `http/protobuf` is
/// spoken: another `OTEL_EXPORTER_OTLP_PROTOCOL` is refused, not ignored.
pub fn start_from_env() -> anyhow::Result<bool> {
    let var = |name: &str| std::env::var(name).ok();
    let (traces, metrics) = wanted(var);
    if !traces && !metrics {
        return Ok(false);
    }
    for name in [
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    ] {
        if let Some(p) = var(name).filter(|p| p.trim() != "http/protobuf") {
            anyhow::bail!("{name}={p:?}: verbgate exports OTLP over http/protobuf only; set it to \"http/protobuf\" or unset it (port 4318 on most collectors)");
        }
    }
    let ca = var("OTEL_EXPORTER_OTLP_CERTIFICATE").map(std::path::PathBuf::from);
    let http = client::OtlpClient::new(ca.as_deref(), EXPORT_TIMEOUT)?;
    // An explicit service name would override OTEL_SERVICE_NAME: only
    // give the default.
    let mut resource = Resource::builder();
    if var("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("verbgate");
    }
    let resource = resource.build();
    let mut t = Telemetry {
        tracer: None,
        tracer_provider: None,
        meter_provider: None,
        request_duration: None,
        ops: None,
        op_duration: None,
    };
    if traces {
        let exporter = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_http_client(http.clone())
            .build()?;
        let provider = SdkTracerProvider::builder()
            .with_resource(resource.clone())
            .with_batch_exporter(exporter)
            .build();
        t.tracer = Some(provider.tracer("verbgate"));
        t.tracer_provider = Some(provider);
    }
    if metrics {
        let exporter = MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_http_client(http)
            .build()?;
        let provider = SdkMeterProvider::builder()
            .with_resource(resource)
            .with_reader(PeriodicReader::builder(exporter).build())
            .build();
        let meter = provider.meter("verbgate");
        let bounds = vec![
            0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0,
            300.0,
        ];
        t.request_duration = Some(
            meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description("MCP request duration as observed on the server")
                .with_boundaries(bounds.clone())
                .build(),
        );
        t.op_duration = Some(
            meter
                .f64_histogram("verbgate.op.duration")
                .with_unit("s")
                .with_description("How long one op of a request took, by verb and outcome")
                .with_boundaries(bounds)
                .build(),
        );
        t.ops = Some(
            meter
                .u64_counter("verbgate.ops")
                .with_unit("{op}")
                .with_description("Ops handled, by verb and outcome")
                .build(),
        );
        t.meter_provider = Some(provider);
    }
    if ACTIVE.set(t).is_err() {
        anyhow::bail!("telemetry was already started");
    }
    tracing::info!(traces, metrics, "exporting OpenTelemetry over OTLP/HTTP");
    Ok(true)
}

/// Export what is buffered and stop (blocking: call from a blocking
/// thread while the runtime still runs, which carries the exports).
pub fn shutdown() {
    let Some(t) = active() else { return };
    if let Some(p) = &t.tracer_provider {
        if let Err(e) = p.shutdown() {
            tracing::warn!(error = %e, "cannot flush the last spans");
        }
    }
    if let Some(p) = &t.meter_provider {
        if let Err(e) = p.shutdown() {
            tracing::warn!(error = %e, "cannot flush the last metrics");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_turns_each_signal_on_and_off() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        assert_eq!(wanted(env(&[])), (false, false), "off by default");
        assert_eq!(wanted(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")])), (true, true));
        assert_eq!(
            wanted(env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces")])),
            (true, false)
        );
        assert_eq!(
            wanted(env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_METRICS_EXPORTER", "none")
            ])),
            (true, false)
        );
        assert_eq!(
            wanted(env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_SDK_DISABLED", "TRUE")
            ])),
            (false, false)
        );
        assert_eq!(wanted(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])), (false, false));
    }
}

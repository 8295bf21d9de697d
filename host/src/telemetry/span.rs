//! The span and measurements of one MCP request ([`RequestSpan`]) and of
//! each op it runs ([`op`]), per the MCP semantic conventions: a SERVER
//! span named `{mcp.method.name} {target}`, with `mcp.method.name`,
//! `gen_ai.tool.name`, `gen_ai.operation.name`, `jsonrpc.request.id`,
//! `mcp.session.id`, `mcp.protocol.version`, `network.transport` and, when
//! it failed, `error.type` (the JSON-RPC error code, or `tool_error` for a
//! result with `isError`); its parent is the W3C `traceparent` (and
//! `tracestate`) a client put in `params._meta`.
//!
//! Everything here is hostile input made safe for a collector: names and
//! values are cut to [`MAX_VALUE_CHARS`], and metrics carry only a resolved
//! verb's name (an op naming no verb counts as `unknown`), so no request
//! can make the server keep one time series per made-up name.

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};
use std::time::{Duration, Instant, SystemTime};

use crate::audit::{Record, RowOutcome};

/// Longest attribute value or span-name part kept, in characters.
pub const MAX_VALUE_CHARS: usize = 128;

/// What names one MCP request.
#[derive(Debug, Clone, Default)]
pub struct RequestInfo<'a> {
    /// `tools/call`, `tools/list`, `tasks/get`, …
    pub method: &'static str,
    /// The tool a `tools/call` names.
    pub tool: Option<&'a str>,
    /// The request's `params._meta`.
    pub meta: Option<&'a Map<String, Value>>,
    /// Its JSON-RPC id.
    pub request_id: Option<String>,
    /// The HTTP session (`Mcp-Session-Id`), if any.
    pub session: Option<&'a str>,
    /// The protocol version it speaks.
    pub protocol: Option<String>,
    /// Whether `tool` is a tool the server has and `protocol` a version it
    /// knows: only then do they become metric attributes (anything a
    /// client makes up counts as `unknown` there, on the span as sent).
    pub tool_known: bool,
    /// See `tool_known`.
    pub protocol_known: bool,
    /// `pipe` (stdio) or `tcp` (HTTP).
    pub network: &'static str,
}

/// One MCP request being handled; ended with [`RequestSpan::end`], or
/// as `cancelled` when dropped unended (the client cancelled or went away).
pub struct RequestSpan {
    cx: Context,
    start: Instant,
    attrs: Vec<KeyValue>,
    ended: bool,
}

/// `params._meta` as a carrier of W3C trace context.
struct Meta<'a>(&'a Map<String, Value>);

impl Extractor for Meta<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// `s`, cut to [`MAX_VALUE_CHARS`] without control characters.
fn clip(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(MAX_VALUE_CHARS).collect()
}

impl RequestSpan {
    /// Start the request's span, or `None` when telemetry is off.
    pub fn start(info: RequestInfo<'_>) -> Option<RequestSpan> {
        let t = super::active()?;
        let parent =
            info.meta.map(|m| TraceContextPropagator::new().extract(&Meta(m))).unwrap_or_default();
        let mut attrs = vec![
            KeyValue::new("mcp.method.name", info.method),
            KeyValue::new("network.transport", info.network),
        ];
        // Metrics get low-cardinality attributes only: no value a client
        // chose freely.
        let mut metric_attrs = attrs.clone();
        let known = |ok: bool, v: &str| if ok { clip(v) } else { "unknown".to_string() };
        if let Some(tool) = info.tool {
            attrs.push(KeyValue::new("gen_ai.tool.name", clip(tool)));
            attrs.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            metric_attrs.push(KeyValue::new("gen_ai.tool.name", known(info.tool_known, tool)));
            metric_attrs.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        if let Some(p) = &info.protocol {
            attrs.push(KeyValue::new("mcp.protocol.version", clip(p)));
            metric_attrs.push(KeyValue::new("mcp.protocol.version", known(info.protocol_known, p)));
        }
        if let Some(id) = &info.request_id {
            attrs.push(KeyValue::new("jsonrpc.request.id", clip(id)));
        }
        if let Some(s) = info.session {
            attrs.push(KeyValue::new("mcp.session.id", clip(s)));
        }
        let cx = match &t.tracer {
            Some(tracer) => {
                let name = match info.tool {
                    Some(tool) => format!("{} {}", info.method, clip(tool)),
                    None => info.method.to_string(),
                };
                let span = tracer
                    .span_builder(name)
                    .with_kind(SpanKind::Server)
                    .with_attributes(attrs)
                    .start_with_context(tracer, &parent);
                parent.with_span(span)
            }
            None => parent,
        };
        Some(RequestSpan { cx, start: Instant::now(), attrs: metric_attrs, ended: false })
    }

    /// The context its ops' spans are children of.
    pub fn context(&self) -> Context {
        self.cx.clone()
    }

    /// End it; `error` is its `error.type` when it failed.
    pub fn end(mut self, error: Option<&str>) {
        self.finish(error);
    }

    fn finish(&mut self, error: Option<&str>) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let span = self.cx.span();
        if let Some(e) = error {
            let e = clip(e);
            span.set_attribute(KeyValue::new("error.type", e.clone()));
            span.set_status(Status::error(e.clone()));
            self.attrs.push(KeyValue::new("error.type", e));
        }
        span.end();
        if let Some(h) = super::active().and_then(|t| t.request_duration.as_ref()) {
            h.record(self.start.elapsed().as_secs_f64(), &self.attrs);
        }
    }
}

impl Drop for RequestSpan {
    fn drop(&mut self) {
        self.finish(Some("cancelled"));
    }
}

/// Record one finished op: a span (child of `parent`, the request's) from
/// its arrival to now, and its count and duration by verb and outcome.
/// `exit_code` is the program's, when its result gives one.
pub fn op(parent: Option<&Context>, r: &Record, exit_code: Option<i64>) {
    let Some(t) = super::active() else { return };
    // Only a verb the registry resolved has a fingerprint; anything else
    // the caller wrote is one bucket, whatever it was.
    let verb = if r.fingerprint.is_some() { clip(&r.verb) } else { "unknown".to_string() };
    let outcome = r.outcome.as_str();
    let metric_attrs =
        [KeyValue::new("verbgate.verb", verb.clone()), KeyValue::new("verbgate.outcome", outcome)];
    if let Some(c) = &t.ops {
        c.add(1, &metric_attrs);
    }
    if let Some(h) = &t.op_duration {
        h.record(Duration::from_millis(r.duration_ms.max(0) as u64).as_secs_f64(), &metric_attrs);
    }
    let Some(tracer) = &t.tracer else { return };
    let mut attrs = metric_attrs.to_vec();
    attrs.push(KeyValue::new("verbgate.op", clip(&r.verb)));
    if let Some(d) = r.decision {
        attrs.push(KeyValue::new("verbgate.decision", d.as_str()));
    }
    if let Some(by) = &r.decided_by {
        attrs.push(KeyValue::new("verbgate.decided_by", clip(by)));
    }
    if let Some(p) = &r.program {
        attrs.push(KeyValue::new("process.executable.path", clip(p)));
    }
    if let Some(code) = exit_code {
        attrs.push(KeyValue::new("process.exit.code", code));
    }
    if r.dry_run {
        attrs.push(KeyValue::new("verbgate.dry_run", true));
    }
    if let RowOutcome::Failed(code) = r.outcome {
        attrs.push(KeyValue::new("error.type", code.as_str()));
    }
    let start = SystemTime::UNIX_EPOCH + Duration::from_millis(r.time_ms.max(0) as u64);
    let parent = parent.cloned().unwrap_or_default();
    let mut span = tracer
        .span_builder(format!("op {verb}"))
        .with_kind(SpanKind::Internal)
        .with_start_time(start)
        .with_attributes(attrs)
        .start_with_context(tracer, &parent);
    use opentelemetry::trace::Span as _;
    if let RowOutcome::Failed(code) = r.outcome {
        span.set_status(Status::error(code.as_str()));
    }
    span.end();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_traceparent_in_meta_is_the_parent() {
        let meta: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "tracestate": "vendor=abc",
        }))
        .unwrap();
        let cx = TraceContextPropagator::new().extract(&Meta(&meta));
        let sc = cx.span().span_context().clone();
        assert_eq!(sc.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_remote() && sc.is_sampled());
        let bad: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"traceparent": "00-zz-yy-01"})).unwrap();
        let cx = TraceContextPropagator::new().extract(&Meta(&bad));
        assert!(!cx.span().span_context().is_valid(), "a malformed traceparent makes a root span");
    }

    #[test]
    fn values_are_cut_and_lose_control_characters() {
        let long = format!("\u{1b}[2J{}", "v".repeat(500));
        let c = clip(&long);
        assert_eq!(c.chars().count(), MAX_VALUE_CHARS);
        assert!(!c.contains('\u{1b}'));
    }
}

"""A real OTLP/HTTP receiver for verbgate's telemetry test: accepts POST
/v1/traces and /v1/metrics (protobuf), decodes them with the project's
official protobuf definitions (opentelemetry-proto, pinned by
`just otel-tools`), answers as a collector does, and appends one JSON line
per span or metric point to OUT.

Usage: python otlp-receiver.py PORT OUT   (PORT 0: any; prints {"port": N} once up)
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[2]


def attrs(kvs):
    out = {}
    for kv in kvs:
        value = MessageToDict(kv.value)
        out[kv.key] = next(iter(value.values())) if value else None
    return out


def emit(line):
    with open(OUT, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(415)
            self.end_headers()
            return
        if self.path == "/v1/traces":
            req, resp = ExportTraceServiceRequest.FromString(body), ExportTraceServiceResponse()
            for rs in req.resource_spans:
                resource = attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        emit({
                            "signal": "span",
                            "name": s.name,
                            "kind": s.kind,
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(),
                            "trace_state": s.trace_state,
                            "status": s.status.code,
                            "start_ns": s.start_time_unix_nano,
                            "end_ns": s.end_time_unix_nano,
                            "attributes": attrs(s.attributes),
                            "resource": resource,
                            "header": self.headers.get("x-test-header"),
                        })
        elif self.path == "/v1/metrics":
            req, resp = ExportMetricsServiceRequest.FromString(body), ExportMetricsServiceResponse()
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        for p in getattr(m, kind).data_points:
                            emit({
                                "signal": "metric",
                                "name": m.name,
                                "unit": m.unit,
                                "kind": kind,
                                "attributes": attrs(p.attributes),
                                "count": getattr(p, "count", None) if kind == "histogram" else None,
                                "value": (p.as_int or p.as_double) if kind == "sum" else None,
                            })
        else:
            self.send_response(404)
            self.end_headers()
            return
        out = resp.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print(json.dumps({"port": server.server_address[1]}), flush=True)
server.serve_forever()

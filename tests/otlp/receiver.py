"""An OTLP/HTTP receiver for tests/all/telemetry.rs, decoding with the official
`opentelemetry-proto` package: listens on 127.0.0.1 (a free port, printed first as
`listening PORT`), and prints one JSON line per accepted connection, per span and per metric.
Answers every export with an empty protobuf response, as a collector does."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/v1/traces":
            req = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            for rs in req.resource_spans:
                resource = attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        emit({
                            "span": s.name,
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(),
                            "kind": s.kind,
                            "status": s.status.code,
                            "duration_ns": s.end_time_unix_nano - s.start_time_unix_nano,
                            "attributes": attrs(s.attributes),
                            "resource": resource,
                        })
            answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        elif self.path == "/v1/metrics":
            req = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        points = [
                            {"attributes": attrs(p.attributes),
                             "value": p.as_int if kind == "sum" else p.count}
                            for p in getattr(m, kind).data_points
                        ] if kind in ("sum", "histogram") else []
                        emit({"metric": m.name, "kind": kind, "points": points})
            answer = metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def verify_request(self, request, client_address):
        emit({"connection": client_address[1]})
        return True


def main():
    server = Server(("127.0.0.1", 0), Handler)
    emit({"listening": server.server_address[1]})
    server.serve_forever()


if __name__ == "__main__":
    main()

"""Decodes an OTLP JSON lines trace file (one `ExportTraceServiceRequest` a line) with OpenTelemetry's own protobuf definitions (`opentelemetry-proto`) and checks
its parenting. Used by sim/tests/sim/traces.rs on the simulator's `traces.otlp.json`.

    python3 py_trace_check.py FILE

`json_format.Parse` refuses a field the protobuf does not define, a value of the wrong type, and an id that is not
hex of the right length (OTLP JSON writes trace and span ids as hex; protobuf's own JSON mapping would read them as
base64, so they are read as strings here and checked as the OTLP specification says). Then, trace by trace:
- exactly one root span, and every other span's parent is a span of the same trace;
- every attempt (a span with `mcpstorm.attempt.replica`) is a child of a gateway call span (service
  `mcpstorm-gateway`, kind SERVER);
- every upstream server's span (kind SERVER outside the agent and gateway services) is a child of an attempt;
- every gateway call span is a child of the agent's span, the root.

Prints a JSON summary on stdout; exit 1 with the first violations on stderr.
"""

import json
import re
import sys
from collections import defaultdict

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

HEX = {16: re.compile(r"^[0-9a-f]{32}$"), 8: re.compile(r"^[0-9a-f]{16}$")}
ID_FIELDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def hex_ids_to_base64(doc, problems):
    """OTLP JSON's hex ids, checked, then written as protobuf JSON's base64 so Parse reads the bytes they stand for."""
    import base64

    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for field, size in ID_FIELDS.items():
                    if field not in span:
                        continue
                    value = span[field]
                    if not isinstance(value, str) or not HEX[size].match(value):
                        problems.append(f"{field} {value!r} is not {size} bytes of lowercase hex")
                        continue
                    span[field] = base64.b64encode(bytes.fromhex(value)).decode()


def attrs(kvs):
    return {kv.key: kv.value for kv in kvs}


def main(path):
    problems = []
    requests = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            hex_ids_to_base64(doc, problems)
            request = ExportTraceServiceRequest()
            json_format.Parse(json.dumps(doc), request, ignore_unknown_fields=False)
            requests.append(request)
    if problems:
        return fail(problems)

    traces = defaultdict(dict)
    for rs in (rs for request in requests for rs in request.resource_spans):
        service = attrs(rs.resource.attributes)["service.name"].string_value
        for ss in rs.scope_spans:
            for span in ss.spans:
                if span.span_id in traces[span.trace_id]:
                    problems.append(f"span {span.span_id.hex()} twice in trace {span.trace_id.hex()}")
                traces[span.trace_id][span.span_id] = (service, span)

    counts = defaultdict(int)
    for trace_id, spans in traces.items():
        roots = [s for _, s in spans.values() if not s.parent_span_id]
        if len(roots) != 1:
            problems.append(f"trace {trace_id.hex()} has {len(roots)} roots")
        for service, span in spans.values():
            a = attrs(span.attributes)
            if span.end_time_unix_nano < span.start_time_unix_nano:
                problems.append(f"span {span.span_id.hex()} ends before it starts")
            if a["mcp.method.name"].string_value != "tools/call":
                problems.append(f"span {span.span_id.hex()}: mcp.method.name is not tools/call")
            if not span.parent_span_id:
                counts["agent"] += 1
                continue
            parent = spans.get(span.parent_span_id)
            if parent is None:
                problems.append(f"span {span.span_id.hex()}: its parent is not in trace {trace_id.hex()}")
                continue
            parent_service, parent_span = parent
            parent_attrs = attrs(parent_span.attributes)
            if "mcpstorm.attempt.replica" in a:
                counts["attempt"] += 1
                if parent_service != "mcpstorm-gateway" or parent_span.kind != Span.SPAN_KIND_SERVER:
                    problems.append(f"attempt {span.span_id.hex()} is not a child of a gateway call span")
            elif service == "mcpstorm-gateway":
                counts["gateway"] += 1
                if parent_span.parent_span_id or span.kind != Span.SPAN_KIND_SERVER:
                    problems.append(f"gateway span {span.span_id.hex()} is not a child of the agent's span")
            else:
                counts["server"] += 1
                if span.kind != Span.SPAN_KIND_SERVER or "mcpstorm.attempt.replica" not in parent_attrs:
                    problems.append(f"server span {span.span_id.hex()} is not a child of an attempt")
            if "mcpstorm.breaker.decision" in a:
                counts["decision " + a["mcpstorm.breaker.decision"].string_value] += 1
    if problems:
        return fail(problems)
    print(json.dumps({"traces": len(traces), **dict(sorted(counts.items()))}))
    return 0


def fail(problems):
    for p in problems[:20]:
        print(p, file=sys.stderr)
    print(f"{len(problems)} problem(s)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

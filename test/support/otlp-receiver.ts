/**
 * An OTLP/HTTP trace receiver for the tests: a node http server on 127.0.0.1 that takes `POST /v1/traces` in
 * protobuf (what sluice's exporter sends) and decodes it with OpenTelemetry's own definitions (otlp-proto/, the
 * opentelemetry-proto repository's .proto files) through protobufjs. No collector binary is installable here (npm
 * and Debian only); this decodes the same payload a collector would.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import protobuf from 'protobufjs';

/** A span as received, ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  status: { code: number; message?: string };
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`): the exporter posts to `<it>/v1/traces`. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Content types of the requests received. */
  contentTypes: string[];
  close(): Promise<void>;
}

const PROTO_ROOT = path.join(import.meta.dirname, 'otlp-proto');

function loadRequestType(): protobuf.Type {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(PROTO_ROOT, target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto', { keepCase: false });
  return root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
}

type AnyValue = Record<string, any>;

function value(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}

function attributes(list: { key: string; value: AnyValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));
}

const hex = (b: Uint8Array | undefined): string => (b ? Buffer.from(b).toString('hex') : '');

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const Request = loadRequestType();
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      contentTypes.push(String(req.headers['content-type']));
      if (req.url !== '/v1/traces') return void res.writeHead(404).end();
      const decoded = Request.toObject(Request.decode(Buffer.concat(chunks)), { longs: String, defaults: false });
      for (const rs of decoded.resourceSpans ?? []) {
        const resource = attributes(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? [])
            spans.push({
              traceId: hex(s.traceId),
              spanId: hex(s.spanId),
              parentSpanId: hex(s.parentSpanId),
              name: s.name,
              kind: s.kind ?? 0,
              attributes: attributes(s.attributes),
              events: (s.events ?? []).map((e: AnyValue) => ({ name: e.name, attributes: attributes(e.attributes) })),
              status: { code: s.status?.code ?? 0, ...(s.status?.message && { message: s.status.message }) },
              resource,
            });
      }
      // An empty ExportTraceServiceResponse: accepted in full.
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

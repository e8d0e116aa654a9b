/**
 * Traces of a run through OpenTelemetry's own SDK, exported over OTLP/HTTP (protobuf) to the endpoint the standard
 * `OTEL_*` variables name (the exporter reads them itself: endpoint, headers, timeout; `OTEL_SERVICE_NAME` and
 * `OTEL_RESOURCE_ATTRIBUTES` describe the resource). Loaded only when those variables ask for traces (enabled.ts).
 *
 * One span per run (`sluice run`), one per unit (`sluice unit`, all its attempts), one per call to the service
 * (`HTTP <method>`, `sluice.paid` true for calls that start paid work), each carrying `sluice.run_id`. Service
 * calls made while a unit is read are its children (an AsyncLocalStorage holds the unit's span), the others the
 * run's. Nothing is registered globally: the provider is this run's and is shut down when the run ends.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { redact, registerSecret } from '../../core/redact.js';
import type { Logger, WorkUnit } from '../../core/types.js';
import type { RunEnded, RunObserver, RunStarted, ServiceCall, ServiceCallEnd } from '../events.js';
import { destination } from '../outbound.js';
import { requestedProtocol, type Env } from './enabled.js';

/** How long the end of a run waits for its spans to be exported. */
const FLUSH_TIMEOUT_MS = 10_000;

export class RunTracer implements RunObserver {
  private readonly provider: BasicTracerProvider;
  private readonly exporter: WatchedExporter;
  /** Where the spans go, secrets masked, for the warning. */
  private readonly endpoint: string;
  private readonly tracer: Tracer;
  private readonly current = new AsyncLocalStorage<Span>();
  private runSpan: Span | undefined;
  private runId = '';

  constructor(
    env: Env,
    private readonly log: Logger,
  ) {
    const protocol = requestedProtocol(env);
    if (protocol !== 'http/protobuf')
      log.warn(`OTEL_EXPORTER_OTLP_PROTOCOL is ${protocol}: sluice exports traces over http/protobuf`);
    const resource = resourceFromAttributes({ 'service.name': 'sluice' }).merge(
      detectResources({ detectors: [envDetector] }),
    );
    this.exporter = new WatchedExporter(new OTLPTraceExporter());
    this.endpoint = tracesEndpoint(env);
    this.provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(this.exporter)] });
    this.tracer = this.provider.getTracer('sluice');
  }

  runStarted(e: RunStarted): void {
    this.runId = e.run;
    this.runSpan = this.tracer.startSpan(
      'sluice run',
      {
        startTime: e.startedAt,
        attributes: {
          'sluice.run_id': e.run,
          'sluice.pipeline': e.pipeline,
          ...(e.shard !== undefined && { 'sluice.shard': e.shard }),
          'sluice.resumed': e.resumed,
          'sluice.sinks': e.sinks,
        },
      },
      ROOT_CONTEXT,
    );
  }

  async unit<T>(unit: WorkUnit, work: () => Promise<T>): Promise<T> {
    const span = this.tracer.startSpan(
      'sluice unit',
      { attributes: { 'sluice.run_id': this.runId, 'sluice.unit_id': unit.id } },
      this.parent(),
    );
    try {
      const result = await this.current.run(span, work);
      span.setStatus({ code: SpanStatusCode.OK });
      return result;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: redact((err as Error)?.message ?? String(err)) });
      throw err;
    } finally {
      span.end();
    }
  }

  unitCommitted(e: { unit: string; sink: string; records: number }): void {
    this.current.getStore()?.addEvent('committed', { 'sluice.sink': e.sink, 'sluice.records': e.records });
  }

  serviceCall(call: ServiceCall): ServiceCallEnd {
    const span = this.tracer.startSpan(
      `HTTP ${call.method}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'sluice.run_id': this.runId,
          'http.request.method': call.method,
          'url.path': call.path,
          'sluice.paid': call.paid,
        },
      },
      trace.setSpan(ROOT_CONTEXT, this.current.getStore() ?? this.runSpan!),
    );
    return (outcome) => {
      if (outcome.status !== undefined) span.setAttribute('http.response.status_code', outcome.status);
      if (outcome.error !== undefined)
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: redact((outcome.error as Error)?.message ?? String(outcome.error)),
        });
      span.end();
    };
  }

  async runEnded(e: RunEnded): Promise<void> {
    const span = this.runSpan;
    if (span) {
      span.setAttributes({
        'sluice.outcome': e.outcome,
        'sluice.exit_code': e.exitCode,
        'sluice.records': e.totals.records,
        'sluice.units.committed': e.totals.units.committed,
      });
      span.setStatus(
        e.outcome === 'succeeded'
          ? { code: SpanStatusCode.OK }
          : { code: SpanStatusCode.ERROR, message: redact(e.cause ?? e.outcome) },
      );
      span.end(e.startedAt + e.durationMs);
    }
    const flushed = this.provider.forceFlush().then(() => this.provider.shutdown());
    const timeout = new Promise<never>((_, reject) => {
      setTimeout(() => reject(new Error(`no answer within ${FLUSH_TIMEOUT_MS} ms`)), FLUSH_TIMEOUT_MS).unref();
    });
    const flushFailure = await Promise.race([flushed, timeout]).then(
      () => undefined,
      (err: unknown) => exportFailureText(err),
    );
    // One warning for the run: the first export that failed (while the run went, or at the end) says why.
    const failure = this.exporter.failure ?? flushFailure;
    if (failure !== undefined)
      this.log.warn(`could not export the run's traces to ${this.endpoint}: ${failure} (the run's data is unaffected)`);
  }

  private parent() {
    return this.runSpan ? trace.setSpan(ROOT_CONTEXT, this.runSpan) : ROOT_CONTEXT;
  }
}

type ExportCallback = Parameters<SpanExporter['export']>[1];
type ExportResult = Parameters<ExportCallback>[0];

/**
 * The OTLP exporter, with the first failure of the run kept: the SDK hands export failures to its global error
 * handler (silent by default), and an export made while the run went is not seen by the final flush.
 */
class WatchedExporter implements SpanExporter {
  failure: string | undefined;

  constructor(private readonly inner: SpanExporter) {}

  export(spans: ReadableSpan[], done: ExportCallback): void {
    this.inner.export(spans, (result: ExportResult) => {
      // ExportResultCode.SUCCESS is 0 (@opentelemetry/core, not a dependency of sluice's own).
      if (result.code !== 0) this.failure ??= exportFailureText(result.error);
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** An export's failure in a few words: `HTTP 500 Internal Server Error`, `ECONNREFUSED`, `no answer within …`. */
function exportFailureText(err: unknown): string {
  const e = (err ?? {}) as { message?: unknown; code?: unknown; cause?: { code?: unknown } };
  const message = typeof e.message === 'string' ? e.message : '';
  if (typeof e.code === 'number') return `HTTP ${e.code}${message ? ` ${message}` : ''}`;
  if (typeof e.code === 'string') return e.code;
  if (typeof e.cause?.code === 'string') return e.cause.code;
  if (/retryable status/i.test(message))
    return 'the endpoint kept answering 429, 502, 503 or 504 until the exporter gave up';
  return message || String(err ?? 'unknown error');
}

/**
 * The traces endpoint as the exporter resolves it from the standard variables, credentials and query values masked;
 * the headers' values (`OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer …`) registered as secrets.
 */
function tracesEndpoint(env: Env): string {
  for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'])
    for (const pair of (env[name] ?? '').split(',')) {
      const value = pair.slice(pair.indexOf('=') + 1).trim();
      registerSecret(value);
      registerSecret(safeDecode(value));
    }
  const own = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const url = own || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : '');
  return URL.canParse(url) ? destination(url).display : 'the OTLP endpoint';
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

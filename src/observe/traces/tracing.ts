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
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { redact } from '../../core/redact.js';
import type { Logger, WorkUnit } from '../../core/types.js';
import type { RunEnded, RunObserver, RunStarted, ServiceCall, ServiceCallEnd } from '../events.js';
import { requestedProtocol, type Env } from './enabled.js';

/** How long the end of a run waits for its spans to be exported. */
const FLUSH_TIMEOUT_MS = 10_000;

export class RunTracer implements RunObserver {
  private readonly provider: BasicTracerProvider;
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
    this.provider = new BasicTracerProvider({
      resource,
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
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
    await Promise.race([flushed, timeout]).catch((err: unknown) =>
      this.log.warn(`could not export the run's traces: ${redact((err as Error).message)}`),
    );
  }

  private parent() {
    return this.runSpan ? trace.setSpan(ROOT_CONTEXT, this.runSpan) : ROOT_CONTEXT;
  }
}

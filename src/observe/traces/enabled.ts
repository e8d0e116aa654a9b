/**
 * Whether the environment asks for traces, by OpenTelemetry's standard variables: an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`), not switched off (`OTEL_SDK_DISABLED=true`,
 * `OTEL_TRACES_EXPORTER=none`). Read without loading the SDK: a run that exports no traces never imports it.
 */
export type Env = Readonly<Record<string, string | undefined>>;

export function tracingRequested(env: Env): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return false;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? 'otlp').split(',').map((s) => s.trim().toLowerCase());
  return exporters.includes('otlp');
}

/** The OTLP protocol asked for; sluice sends `http/protobuf` (the specification's default). */
export function requestedProtocol(env: Env): string {
  return (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
}

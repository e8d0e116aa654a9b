/** Types of the `parse-prometheus-text-format` package (it ships none): Prometheus's text format as objects. */
declare module 'parse-prometheus-text-format' {
  export interface PrometheusSample {
    value: string;
    labels?: Record<string, string>;
  }
  export interface PrometheusFamily {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'SUMMARY' | 'HISTOGRAM' | 'UNTYPED';
    metrics: PrometheusSample[];
  }
  export default function parsePrometheusTextFormat(text: string): PrometheusFamily[];
}

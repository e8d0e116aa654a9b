/**
 * Secrets (API keys) registered here are replaced by `***` in every log line and error message.
 * A process-wide set is deliberate: a key must never leak through any path, including third-party error text.
 */
const secrets = new Set<string>();

export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 4) secrets.add(value);
}

export function redact(text: string): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join('***');
  return out;
}

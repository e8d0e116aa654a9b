/**
 * What in a pipeline is secret, decided once, when its file is read — before any of it can reach a message — and
 * registered with the one redaction point (core/redact.ts):
 *
 * - options a component marks as secret in its schema (core/secret-option.ts): `service.api_key` whole; the
 *   credentials inside `service.base_url`, a postgres sink's `url` (URL or libpq `key=value`, quoted values too)
 *   and an S3 `endpoint`;
 * - credentials inside any other string of the file that is a URL with `user:password@` or a libpq connection
 *   string with `password=` (a misspelt option still holds the secret it was given);
 * - values of environment variables whose name says they are secret (`*_KEY`, `*TOKEN`, `*SECRET*`, `*PASSWORD*`,
 *   `*PASS`, `*PW`, `*CREDENTIALS`), wherever the file interpolates them: `write: ${PGPW}` put in the wrong place is
 *   still a password. Other interpolated values (a table name, a URL without credentials, a concurrency) are not
 *   secret: masking them would garble every message that names them, and dead letters quoting the same words;
 * - the credentials the libpq and AWS environments carry (`PGPASSWORD`, `AWS_SECRET_ACCESS_KEY`,
 *   `AWS_SESSION_TOKEN`), which the postgres sink and S3 outputs read on their own.
 *
 * Validation errors never quote an interpolated value at all: they show the `${VAR}` reference (issues.ts).
 */
import type { z } from 'zod';
import { registerConnectionSecrets, registerSecret } from '../core/redact.js';
import { secretOptions, type SecretKind } from '../core/secret-option.js';
import type { Env, YamlPath } from './interpolate.js';
import { schemaAt } from './schema-walk.js';

/** Environment variables holding credentials that components read themselves (not through the file). */
const CREDENTIAL_VARIABLES = ['PGPASSWORD', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'];

/** A variable named as a secret: its value is one wherever the file puts it. */
const SECRET_VARIABLE = /(?:KEY|TOKEN|SECRETS?|PASS|PASSWORD|PASSWD|PW|CREDENTIALS?)$|SECRET|PASSWORD|TOKEN/i;

export function isSecretVariable(name: string): boolean {
  return SECRET_VARIABLE.test(name);
}

/**
 * Registers every secret of a pipeline file's data (interpolated, before or after the schema parsed it): marked
 * options by `schema`, connection strings anywhere, and secret-named variables among `variables` (the names each
 * interpolated value referenced).
 */
export function registerPipelineSecrets(data: unknown, schema: z.ZodType, variables: Iterable<string>, env: Env): void {
  // Read by the driver and the SDK from the process's environment, whatever the file was interpolated with.
  for (const name of CREDENTIAL_VARIABLES) registerSecret(process.env[name]);
  for (const name of variables) if (isSecretVariable(name)) registerSecret(env[name]);
  for (const [path, value] of stringLeaves(data, [])) {
    const kind = secretKindAt(schema, data, path);
    if (kind === 'value') registerSecret(value);
    registerConnectionSecrets(value);
  }
}

function* stringLeaves(value: unknown, path: YamlPath): Generator<[YamlPath, string]> {
  if (typeof value === 'string') yield [path, value];
  else if (Array.isArray(value)) for (let i = 0; i < value.length; i++) yield* stringLeaves(value[i], [...path, i]);
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) yield* stringLeaves(v, [...path, k]);
}

/** The secret mark on the option at `path`, on any of its wrappers (optional, default, described copies). */
function secretKindAt(root: z.ZodType, data: unknown, path: YamlPath): SecretKind | undefined {
  let schema = schemaAt(root, data, path);
  for (let i = 0; schema !== undefined && i < 32; i++) {
    const mark = secretOptions.get(schema);
    if (mark) return mark.secret;
    const def = (schema as unknown as { _zod: { def: { innerType?: z.ZodType; in?: z.ZodType } } })._zod.def;
    schema = def.innerType ?? def.in;
  }
  return undefined;
}

/**
 * Validating a pipeline file's text against a registry: YAML with positions → `${ENV}` interpolation → the schemas
 * → what can be checked without the service (referenced files exist and are readable, merge keys are output
 * columns where the transforms fix them). Every problem of the file is collected and reported at file:line:column,
 * with what is allowed there.
 *
 * Typing of interpolated values: a value that is exactly one reference (`concurrency: ${N:-4}`, quoted or not)
 * becomes a number or a boolean when the schema wants one at that place and the text reads as one (`4`, `2.5`,
 * `true`, `false`); everything else stays a string. Converting by what the schema wants, rather than by what the
 * text looks like, keeps `api_key: ${KEY}` a string even when the key happens to be all digits.
 */
import path from 'node:path';
import type { z } from 'zod';
import { ConfigError } from '../core/errors.js';
import { redact } from '../core/redact.js';
import { interpolateDocument, type Env, type YamlPath } from './interpolate.js';
import { toProblems, valueAt, type Problem } from './issues.js';
import type { LoadedPipeline } from './loaded-pipeline.js';
import { mergeKeyProblems } from './merge-keys.js';
import { referencedFileProblems } from './referenced-files.js';
import type { Registry } from './registry.js';
import { pipelineSchema } from './schema.js';
import { registerPipelineSecrets } from './secrets.js';
import { isMap, isSeq, visit } from 'yaml';
import { locate, locateKey, parseYaml, positionAt, type Position, type YamlSource } from './yaml-source.js';

export interface Validation {
  /** Every problem of the file, in file order. */
  problems: ConfigError[];
  /** Set when there are no problems. */
  pipeline?: LoadedPipeline;
}

/** Where each problem of a file is (the mapping it is about) and whether it is an unknown key. */
const placeOf = new WeakMap<ConfigError, { mapping: string; unknownKey: boolean }>();

/**
 * The problem a failed run names on its one line: the first in the file, unless an unknown key sits in the same
 * mapping — a misspelt option causes the "missing required key" of the option it was meant to be, and is the fix.
 */
function primary(problems: ConfigError[]): ConfigError {
  const first = problems[0]!;
  const at = placeOf.get(first);
  if (!at || at.unknownKey) return first;
  return problems.find((p) => placeOf.get(p)?.unknownKey && placeOf.get(p)?.mapping === at.mapping) ?? first;
}

/** A pipeline file with problems: the most telling one as the message, all of them in `problems`. */
export class PipelineFileError extends ConfigError {
  constructor(readonly problems: ConfigError[]) {
    const first = primary(problems);
    const more = problems.length - 1;
    const message = first.message.slice(`${first.file}:${first.line}:${first.column}: `.length);
    super(
      first.file,
      first.line,
      first.column,
      more > 0
        ? `${message} (and ${more} more problem${more === 1 ? '' : 's'}: \`sluice validate\` lists them)`
        : message,
      first.hint,
    );
    this.name = 'PipelineFileError';
  }
}

/** A file wrong as a whole (empty, not a mapping, aliases that explode): one problem, and nothing else is checked. */
function onlyProblem(file: string, at: { line: number; column: number }, message: string, hint: string): Validation {
  return { problems: [new ConfigError(file, at.line, at.column, message, hint)] };
}

export function validatePipelineText(file: string, text: string, env: Env, reg: Registry): Validation {
  const { source, problems: syntax } = parseYaml(file, text);
  // After a syntax error the document is a guess: schema errors on it would only mislead.
  if (syntax.length)
    return {
      problems: syntax.map(
        (p) =>
          new ConfigError(
            file,
            p.line,
            p.column,
            p.message,
            /[{[].*\$\{/.test(p.sourceLine) ? FLOW_REF_HINT : YAML_HINT,
          ),
      ),
    };
  if (source.doc.contents === null)
    return onlyProblem(
      file,
      { line: 1, column: 1 },
      'the file is empty',
      'start with `version: 1`, `name`, `service`, `source` and `sink`',
    );

  if (!isMap(source.doc.contents)) {
    return onlyProblem(
      file,
      positionAt(source, source.doc.contents.range?.[0] ?? 0),
      `the file: expected a mapping, got ${isSeq(source.doc.contents) ? 'a list' : 'a single value'}`,
      'start with `version: 1`, `name`, `service`, `source` and `sink`, one `key: value` per line',
    );
  }

  const errors: ConfigError[] = [];
  const interpolation = interpolateDocument(source.doc, env);
  const failedPaths = interpolation.problems.map((p) => JSON.stringify(p.path));
  for (const p of interpolation.problems) {
    const range = p.scalar.range;
    const found = range ? source.text.indexOf(p.error.reference, range[0]) : -1;
    const offset = range ? (found >= 0 && found < range[1] ? found : range[0]) : 0;
    const at = positionAt(source, offset);
    errors.push(new ConfigError(file, at.line, at.column, redact(p.error.message), redact(p.error.hint)));
  }

  let data: unknown;
  try {
    data = source.doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as unknown;
  } catch (err) {
    // The yaml library refuses aliases that expand past the count: a "billion laughs" file, not a bug of ours.
    if (!/alias/i.test(err instanceof Error ? err.message : '')) throw err;
    return onlyProblem(
      file,
      firstAlias(source),
      `the file's aliases (\`*name\`) expand to more than ${MAX_ALIAS_COUNT} values: a pipeline file never needs that many, and expanding them would exhaust memory`,
      'write the repeated parts out, or use fewer nested aliases',
    );
  }
  const schema = pipelineSchema(reg);
  // Before any message can quote a value of the file.
  registerPipelineSecrets(data, schema as z.ZodType, [...interpolation.variables.values()].flat(), env);

  const references = new Set(interpolation.wholeReferences.keys());
  let parsed = schema.safeParse(data);
  if (!parsed.success && coerceReferences(data, parsed.error.issues, references)) parsed = schema.safeParse(data);

  const problems: Problem[] = [];
  if (!parsed.success) {
    const ctx = { schema: schema as z.ZodType, data, registry: reg, interpolated: interpolation.written };
    for (const issue of parsed.error.issues) problems.push(...toProblems(ctx, issue));
  }
  problems.push(...sinkProblems(data), ...serviceProblems(data, reg));
  if (parsed.success) {
    // Only on a valid file: the options are then what a run will read. Checked here, before any request is made.
    const baseDir = path.dirname(path.resolve(file));
    problems.push(...referencedFileProblems(parsed.data, baseDir, reg), ...mergeKeyProblems(parsed.data, reg));
  }

  for (const p of problems) {
    // A value whose interpolation failed was reported already; what the schema thinks of `${X}` is noise.
    if (failedPaths.some((f) => isUnder(JSON.stringify(p.path), f))) continue;
    const at = p.key !== undefined ? locateKey(source, p.path, p.key) : locate(source, p.path);
    const error = new ConfigError(file, at.line, at.column, redact(p.message), redact(p.hint ?? GENERIC_HINT));
    // The mapping a problem is about: a key that is missing (`dataset_id` is required) belongs to the mapping that
    // lacks it, where a misspelt `datset_id` sits as an unknown key.
    const missing = p.key === undefined && p.path.length > 0 && valueAt(data, p.path) === undefined;
    placeOf.set(error, {
      mapping: JSON.stringify(missing ? p.path.slice(0, -1) : p.path),
      unknownKey: p.key !== undefined,
    });
    errors.push(error);
  }
  const unique = dedupe(errors).sort((a, b) => a.line - b.line || a.column - b.column);
  if (unique.length > 0 || !parsed.success) return { problems: unique };

  const absolute = path.resolve(file);
  // The variable the key came from, for the 401 fix line (runtime/service.ts): not an option, never in the file.
  const apiKeyVariable = interpolation.variables.get(JSON.stringify(['service', 'api_key']))?.[0];
  const config = parsed.data as LoadedPipeline['config'];
  if (apiKeyVariable !== undefined && config.service !== undefined)
    Object.assign(config.service, { api_key_variable: apiKeyVariable });
  return {
    problems: [],
    pipeline: { file: absolute, baseDir: path.dirname(absolute), name: parsed.data.name, config },
  };
}

/** Values that aliases may expand to in one file: generous for repeated settings, far below a YAML bomb's. */
const MAX_ALIAS_COUNT = 1000;

function firstAlias(source: YamlSource): Position {
  let offset = 0;
  visit(source.doc, {
    Alias(_, node) {
      offset = node.range?.[0] ?? 0;
      return visit.BREAK;
    },
  });
  return positionAt(source, offset);
}

const GENERIC_HINT = 'see docs/reference/ for the options; config/pipeline.schema.json gives editors completion';

const YAML_HINT = 'fix the YAML syntax (indentation with spaces, `key: value`, quotes around values with `: ` or `#`)';

const FLOW_REF_HINT =
  "inside `{ }` or `[ ]` a `${…}` value must be quoted: write `{ retries: '${N}' }`, or use block style (one key per line)";

function isUnder(problemPath: string, failedPath: string): boolean {
  return problemPath === failedPath || problemPath.startsWith(failedPath.slice(0, -1) + ',');
}

function dedupe(errors: ConfigError[]): ConfigError[] {
  const seen = new Set<string>();
  return errors.filter((e) => (seen.has(e.message) ? false : (seen.add(e.message), true)));
}

/** Whole-reference values where the schema wants a number or boolean, converted in place. Returns whether any was. */
function coerceReferences(data: unknown, issues: z.core.$ZodIssue[], references: ReadonlySet<string>): boolean {
  let changed = false;
  for (const issue of issues) {
    if (issue.code !== 'invalid_type' || !references.has(JSON.stringify(issue.path))) continue;
    const text = valueAt(data, issue.path as YamlPath);
    if (typeof text !== 'string') continue;
    let value: number | boolean | undefined;
    if (
      (issue.expected === 'number' || issue.expected === 'int') &&
      /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text.trim())
    )
      value = Number(text);
    else if (issue.expected === 'boolean' && /^(true|false)$/i.test(text.trim()))
      value = text.trim().toLowerCase() === 'true';
    if (value === undefined) continue;
    const parent = valueAt(data, issue.path.slice(0, -1) as YamlPath) as Record<string | number, unknown>;
    parent[issue.path.at(-1) as string | number] = value;
    changed = true;
  }
  return changed;
}

/** A source that calls the service needs the `service` block; one that reads local files does not. */
function serviceProblems(data: unknown, reg: Registry): Problem[] {
  if (data === null || typeof data !== 'object' || Array.isArray(data) || 'service' in data) return [];
  const type = valueAt(data, ['source', 'type']);
  const def = reg.source.find((d) => d.type === type);
  if (def === undefined || def.offline === true) return [];
  return [
    {
      path: [],
      message: `the pipeline has no \`service\` block, and a \`${def.type}\` source calls the service`,
      hint: 'add `service: { base_url: ${SLUICE_BASE_URL:-emulator}, api_key: ${SLUICE_API_KEY} }` (only a `file` source needs none)',
    },
  ];
}

function sinkProblems(data: unknown): Problem[] {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return [];
  const has = (k: string): boolean => k in data;
  if (has('sink') && has('sinks'))
    return [
      {
        path: [],
        key: 'sinks',
        message: 'set either `sink` or `sinks`, not both',
        hint: 'keep `sink:` for one sink, or move it into the `sinks:` list to write to several',
      },
    ];
  if (!has('sink') && !has('sinks'))
    return [
      { path: [], message: 'the pipeline has no sink', hint: 'add a `sink:` block (or `sinks:` to write to several)' },
    ];
  return [];
}

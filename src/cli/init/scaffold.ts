/**
 * The files `sluice init <source> --sink <sink>` writes: a commented pipeline that runs at once against the embedded
 * emulator, an `.env.example` naming every variable it reads, and any input the source needs (a sample file). Built
 * from the registry: the source's and sink's schemas say what each option is (render.ts), templates.ts gives the
 * example values.
 */
import { findDef, registry as defaultRegistry, type Registry } from '../../pipeline/registry.js';
import { pipelineSchema, serviceSchema } from '../../pipeline/schema.js';
import { objectShape, unwrap } from '../../pipeline/schema-walk.js';
import { commentLines, renderMapping } from './render.js';
import { SERVICE_ENV, SINK_TEMPLATES, SOURCE_TEMPLATES, type EnvVar, type SourceTemplate } from './templates.js';

export interface ScaffoldRequest {
  source: string;
  sink: string;
  /** The pipeline's name; its file is `<name>.yaml`. */
  name: string;
  registry?: Registry;
}

export interface ScaffoldFile {
  /** Relative to the directory the files go to. */
  path: string;
  text: string;
}

/** The write modes a sink's schema allows (its `write` enum). */
function writeModes(sinkType: string, reg: Registry): string[] {
  const write = objectShape(findDef('sink', sinkType, reg).schema)?.write;
  const options = write ? (unwrap(write) as { options?: unknown }).options : undefined;
  return Array.isArray(options) ? options.filter((o): o is string => typeof o === 'string') : [];
}

/** How the sink writes what the source reads: merge on the source's key where the sink can, else the template's. */
function writeOf(t: SourceTemplate, sinkType: string, reg: Registry): Record<string, unknown> {
  const modes = writeModes(sinkType, reg);
  if (t.primaryKey && modes.includes('merge')) return { write: 'merge', primary_key: t.primaryKey };
  return modes.includes(t.write) ? { write: t.write } : {};
}

function template<T>(kind: string, type: string, templates: Record<string, T>): T {
  const t = templates[type];
  if (t === undefined)
    throw new Error(`sluice init has no template for the ${kind} "${type}": add one to src/cli/init/templates.ts`);
  return t;
}

/** Every variable the pipeline text references (`${NAME…}`), in order. */
export function referencedVariables(text: string): string[] {
  const values = text
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('#'))
    .join('\n');
  return [...new Set([...values.matchAll(/(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!))];
}

function envExample(pipelineFile: string, vars: EnvVar[]): string {
  const lines = [
    `# The variables ${pipelineFile} reads, for your shell or your scheduler (never commit the real values).`,
    '# Copy to .env, fill in, then load it before a run:  set -a; . ./.env; set +a',
    '# Left empty, each falls back to the default in the pipeline: the embedded emulator, a local output.',
  ];
  for (const v of vars) {
    lines.push('', ...commentLines(v.about, 0), v.optional ? `# ${v.name}=` : `${v.name}=`);
  }
  return lines.join('\n') + '\n';
}

export function scaffold(req: ScaffoldRequest): ScaffoldFile[] {
  const reg = req.registry ?? defaultRegistry;
  const sourceDef = findDef('source', req.source, reg);
  const sinkDef = findDef('sink', req.sink, reg);
  const t = template('source', req.source, SOURCE_TEMPLATES);
  const s = template('sink', req.sink, SINK_TEMPLATES);
  const offline = sourceDef.offline === true;

  const config: Record<string, unknown> = {
    version: 1,
    name: req.name,
    ...(!offline && {
      service: {
        base_url: '${SLUICE_BASE_URL:-emulator}',
        api_key: '${SLUICE_API_KEY:-emulator-key}',
        ...(t.emulator && { emulator: t.emulator }),
      },
    }),
    source: { type: req.source, ...t.options },
    transforms: t.transforms,
    sink: { type: req.sink, ...s.options(req.name), ...writeOf(t, req.sink, reg) },
  };
  const transformNotes = (t.transforms ?? []).map((x) => {
    const type = String(x.type);
    return `${type}: ${findDef('transform', type, reg).description}`;
  });
  const body = renderMapping(
    config,
    {
      schema: pipelineSchema(reg),
      listUnset: true,
      // `sink` is set; `service` is listed only for sources that call the service.
      skip: ['sinks', ...(offline ? ['service'] : [])],
      children: {
        service: { schema: serviceSchema, listUnset: true },
        source: { schema: sourceDef.schema, listUnset: true, notes: { type: sourceDef.description } },
        sink: { schema: sinkDef.schema, listUnset: true, notes: { type: sinkDef.description } },
      },
      itemComments: { transforms: transformNotes },
    },
    0,
  );

  const file = `${req.name}.yaml`;
  const run = `sluice run ${file} --show 5`;
  const header = [
    `# ${req.source} → ${req.sink}, written by \`sluice init ${req.source} --sink ${req.sink}\`.`,
    ...(offline
      ? [`# Try it now:  ${run}`]
      : [
          '# Try it now, against the embedded emulator (no account, nothing paid):',
          `#   ${run}`,
          '# Against the service: set SLUICE_BASE_URL and SLUICE_API_KEY (see .env.example) and run the same command.',
        ]),
    ...(t.cost ? commentLines(t.cost, 0) : []),
    ...(s.needs ? [`# The sink needs ${s.needs}.`] : []),
    '# Each option has its description above it; commented-out options are left at the default shown.',
    '# All options: docs/reference/ in the sluice repository, or config/pipeline.schema.json in your editor.',
    '',
  ];
  const text = [...header, ...body].join('\n') + '\n';

  const referenced = referencedVariables(text);
  const known = [...(offline ? [] : SERVICE_ENV), ...s.env];
  const vars = [
    ...known.filter((v) => v.optional || referenced.includes(v.name)),
    ...referenced
      .filter((n) => !known.some((v) => v.name === n))
      .map((name) => ({ name, about: 'Read by the pipeline.' })),
  ];
  const files: ScaffoldFile[] = [{ path: file, text }];
  if (vars.length > 0) files.push({ path: '.env.example', text: envExample(file, vars) });
  for (const [path, content] of Object.entries(t.files ?? {})) files.push({ path, text: content });
  return files;
}

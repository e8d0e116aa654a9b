/**
 * The `sluice` command line: yargs with one module per command, run in-process against a `CliIo` and returning
 * the exit status (main.ts wires it to the real process; tests call it directly).
 *
 * Start-up time is paid on every cron run and every `--help`, so nothing is imported before it is needed: only the
 * named command's module is loaded (all of them only to list them), and a command module imports what its handler
 * does (the pipeline loader, the engine, the emulator) with `import()` inside the handler.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type yargsFactory from 'yargs';
import type { CommandModule } from 'yargs';
import { didYouMean } from '../core/suggest.js';
import { parseDuration } from '../core/duration.js';
import { refuseEmptyValues } from './args.js';
import type { CliContext } from './context.js';
import type { CliIo } from './io.js';
import { reportError, UsageError, type ErrorFormat } from './report.js';

// yargs' CommonJS build: its ESM build lays help out with a fallback that wraps text in the middle of words.
const yargs = createRequire(import.meta.url)('yargs') as typeof yargsFactory;

type CommandLoader = (ctx: CliContext) => Promise<CommandModule<any, any>>;

/** Every command's module, in the order `sluice --help` lists them. */
const COMMAND_MODULES: Record<string, CommandLoader> = {
  init: async (ctx) => (await import('./commands/init.js')).initCommand(ctx),
  run: async (ctx) => (await import('./commands/run.js')).runCommand(ctx),
  prepare: async (ctx) => (await import('./commands/prepare.js')).prepareCommand(ctx),
  finalize: async (ctx) => (await import('./commands/prepare.js')).finalizeCommand(ctx),
  validate: async (ctx) => (await import('./commands/validate.js')).validateCommand(ctx),
  plan: async (ctx) => (await import('./commands/plan.js')).planCommand(ctx),
  schema: async (ctx) => (await import('./commands/schema.js')).schemaCommand(ctx),
  emulator: async (ctx) => (await import('./commands/emulator.js')).emulatorCommand(ctx),
  zones: async (ctx) => (await import('./commands/zones.js')).zonesCommand(ctx),
  datasets: async (ctx) => (await import('./commands/datasets.js')).datasetsCommand(ctx),
  'dead-letters': async (ctx) => (await import('./commands/dead-letters.js')).deadLettersCommand(ctx),
  runs: async (ctx) => (await import('./commands/runs.js')).runsCommand(ctx),
  state: async (ctx) => (await import('./commands/state.js')).stateCommand(ctx),
  report: async (ctx) => (await import('./commands/report.js')).reportCommand(ctx),
  compact: async (ctx) => (await import('./commands/compact.js')).compactCommand(ctx),
};

const COMMANDS = Object.keys(COMMAND_MODULES);
/** Commands whose first argument is a subcommand. */
const GROUPS = ['zones', 'datasets', 'state'];

/** The package's version: package.json is two folders up from the sources (src/cli/) and three from dist/src/cli/. */
function version(): string {
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'sluice') return pkg.version ?? 'unknown';
    } catch {
      // not this folder: try the next one up
    }
  }
  return 'unknown';
}

/** The modules of the command the command line names, or of all commands when it names none (or a wrong one). */
function commandsFor(argv: string[], ctx: CliContext): Promise<CommandModule<any, any>[]> {
  const named = argv.find((a) => !a.startsWith('-'));
  const load = named !== undefined ? COMMAND_MODULES[named] : undefined;
  return Promise.all(load ? [load(ctx)] : Object.values(COMMAND_MODULES).map((l) => l(ctx)));
}

/** yargs' words for a bad command line, plus what to do about it. */
function usageError(message: string, argv: string[]): UsageError {
  const first = argv.find((a) => !a.startsWith('-'));
  const unknown = /^Unknown arguments?: (.+)$/.exec(message)?.[1];
  if (unknown && first !== undefined && !COMMANDS.includes(first)) {
    const guess = didYouMean(first, COMMANDS);
    return new UsageError(
      `unknown command "${first}"${guess ? ` (did you mean "${guess}"?)` : ''}`,
      `the commands are ${COMMANDS.join(', ')}; see sluice --help`,
    );
  }
  // `run --wait nightly.yaml`: an option whose value is optional took the file as its value.
  const afterWait = argv[argv.indexOf('--wait') + 1];
  if (argv.includes('--wait') && afterWait !== undefined && Number.isNaN(parseDuration(afterWait)))
    return new UsageError(
      `--wait took "${afterWait}" for its duration`,
      'write --wait=10m (with "="), or put --wait after the pipeline file',
    );
  const words = argv.filter((a) => !a.startsWith('-'));
  const command =
    first && COMMANDS.includes(first)
      ? ['sluice', ...words.slice(0, GROUPS.includes(first) ? 2 : 1)].join(' ')
      : 'sluice';
  const text = /^Not enough non-option arguments/.test(message)
    ? `\`${command}\` is missing an argument`
    : message.replace(/\s*\n\s*/g, ' ');
  return new UsageError(text, `see ${command} --help for the arguments and examples`);
}

/**
 * `--log-format json` read from the raw command line, not from yargs: an error yargs itself throws (a bad option)
 * must come out in the format the log collector expects too.
 */
function errorFormatOf(argv: string[]): ErrorFormat {
  const at = argv.lastIndexOf('--log-format');
  const value = at >= 0 ? argv[at + 1] : argv.findLast((a) => a.startsWith('--log-format='))?.slice(13);
  return value === 'json' ? 'json' : 'text';
}

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const ctx: CliContext = { io, exitCode: 0 };
  const debug = argv.includes('--debug');
  const parser = yargs()
    .scriptName('sluice')
    .usage(
      '$0 <command> [options]\n\nStreams web data from the data-collection service into DuckDB, Postgres, Parquet and JSONL.',
    );
  for (const command of await commandsFor(argv, ctx)) parser.command(command);
  parser
    .option('debug', { type: 'boolean', default: false, describe: 'Stack traces with errors' })
    .middleware((args) => refuseEmptyValues(argv, args), true)
    .demandCommand(1, 'name a command')
    .strict()
    .exitProcess(false)
    .version(version())
    .help()
    .alias('h', 'help')
    .wrap(io.columns)
    .example('$0 init reviews --sink postgres', 'Write a pipeline to start from')
    .example('$0 run pipelines/company_profiles.yaml', 'Run a pipeline (resumes a failed run)')
    .example('$0 validate pipelines/*.yaml', 'Check pipeline files')
    .example('$0 emulator --port 8080', 'Serve the emulated service')
    .epilogue('Every command has --help with examples. Pipeline options: docs/reference/; guides: docs/README.md.')
    // Throwing stops yargs before it runs the command's handler with the bad arguments.
    .fail((message, err) => {
      throw err && !(err.name === 'YError') ? err : usageError(message ?? err?.message ?? 'bad arguments', argv);
    });
  try {
    let output = '';
    await parser.parseAsync(argv, {}, (_err, _args, text) => {
      output = text;
    });
    if (output) io.out(output);
    return ctx.exitCode;
  } catch (err) {
    return reportError(io, err, { debug, format: errorFormatOf(argv) });
  }
}

/**
 * The `sluice` command line: yargs with one module per command, run in-process against a `CliIo` and returning
 * the exit status (main.ts wires it to the real process; tests call it directly).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type yargsFactory from 'yargs';
import { didYouMean } from '../pipeline/issues.js';
import { datasetsCommand } from './commands/datasets.js';
import { deadLettersCommand } from './commands/dead-letters.js';
import { emulatorCommand } from './commands/emulator.js';
import { planCommand } from './commands/plan.js';
import { runCommand } from './commands/run.js';
import { validateCommand } from './commands/validate.js';
import { zonesCommand } from './commands/zones.js';
import type { CliContext } from './context.js';
import type { CliIo } from './io.js';
import { reportError, UsageError } from './report.js';

// yargs' CommonJS build: its ESM build lays help out with a fallback that wraps text in the middle of words.
const yargs = createRequire(import.meta.url)('yargs') as typeof yargsFactory;

const COMMANDS = ['run', 'validate', 'plan', 'emulator', 'zones', 'datasets', 'dead-letters'];
/** Commands whose first argument is a subcommand. */
const GROUPS = ['zones', 'datasets'];

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
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

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const ctx: CliContext = { io, exitCode: 0 };
  const debug = argv.includes('--debug');
  const parser = yargs()
    .scriptName('sluice')
    .usage(
      '$0 <command> [options]\n\nStreams web data from the data-collection service into DuckDB, Parquet and JSONL.',
    )
    .command(runCommand(ctx))
    .command(validateCommand(ctx))
    .command(planCommand(ctx))
    .command(deadLettersCommand(ctx))
    .command(emulatorCommand(ctx))
    .command(zonesCommand(ctx))
    .command(datasetsCommand(ctx))
    .option('debug', { type: 'boolean', default: false, describe: 'Stack traces with errors' })
    .demandCommand(1, 'name a command')
    .strict()
    .exitProcess(false)
    .version(version())
    .help()
    .alias('h', 'help')
    .wrap(io.columns)
    .example('$0 run pipelines/company_profiles.yaml', 'Run a pipeline (resumes a failed run)')
    .example('$0 validate pipelines/*.yaml', 'Check pipeline files')
    .example('$0 emulator --port 8080', 'Serve the emulated service')
    .epilogue('Every command has --help with examples. Pipelines: see README.md "Pipeline files".')
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
    return reportError(io, err, debug);
  }
}

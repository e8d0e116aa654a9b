/**
 * The service client for one-off commands (`zones …`, `datasets …`): the address from `--base-url` or
 * SLUICE_BASE_URL, the key only from the environment (a flag would end up in shell history and `ps`).
 * `--base-url emulator` starts the embedded emulator for the duration of the command.
 */
import type { Argv, CommandModule } from 'yargs';
import type { ServiceClient } from '../client/index.js';
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import { registerSecret } from '../core/redact.js';
import type { CliIo } from './io.js';
import { UsageError } from './report.js';

export interface ServiceArgs {
  'base-url'?: string;
  'api-key-env': string;
}

export function serviceOptions<T>(y: Argv<T>) {
  return y
    .option('base-url', {
      type: 'string',
      describe: 'Service address (default $SLUICE_BASE_URL); `emulator` starts the embedded emulator',
    })
    .option('api-key-env', {
      type: 'string',
      default: 'SLUICE_API_KEY',
      describe: 'Environment variable that holds the API key',
    });
}

export function serviceConfig(
  io: CliIo,
  args: ServiceArgs,
): { base_url: string; api_key: string; api_key_variable: string } {
  const baseUrl = args['base-url'] ?? io.env.SLUICE_BASE_URL;
  if (!baseUrl)
    throw new SluiceError('no service address', {
      hint: 'set SLUICE_BASE_URL=https://api.brightdata.com or pass --base-url (`--base-url emulator` works offline)',
      exitCode: EXIT_CODES.config,
    });
  if (baseUrl !== 'emulator' && !/^https?:\/\/\S+$/.test(baseUrl))
    throw new SluiceError(`the service address "${baseUrl}" is not an http(s) URL`, {
      hint: 'pass an address such as https://api.brightdata.com, or `emulator`',
      exitCode: EXIT_CODES.config,
    });
  const envName = args['api-key-env'];
  const key = io.env[envName] ?? (baseUrl === 'emulator' ? 'emulator-key' : undefined);
  if (!key)
    throw new SluiceError(`no API key: ${envName} is not set`, {
      hint: `export ${envName}=<your API key> (it is read from the environment only, never from a flag)`,
      exitCode: EXIT_CODES.config,
    });
  registerSecret(key);
  return { base_url: baseUrl, api_key: key, api_key_variable: envName };
}

/** Runs `fn` with a client and closes it (and the embedded emulator) afterwards, whatever happens. */
export async function withClient<T>(
  io: CliIo,
  args: ServiceArgs,
  fn: (client: ServiceClient) => Promise<T>,
): Promise<T> {
  const config = serviceConfig(io, args);
  const [{ ServiceConnection }, { createLogger }] = await Promise.all([
    import('../runtime/service.js'),
    import('../runtime/logger.js'),
  ]);
  const log = createLogger({ format: 'text', level: 'warn', write: (line) => io.err(line) });
  const connection = new ServiceConnection(config, process.cwd(), log, { retries: 0 });
  try {
    return await fn(await connection.get());
  } finally {
    await connection.close();
  }
}

/** Account-changing and paid commands run only with `--yes`. */
export function requireYes(args: { [k: string]: unknown }, what: string): void {
  if (!args.yes)
    throw new UsageError(
      `${what}: not done without --yes`,
      'add --yes to confirm (this changes the account or costs money)',
    );
}

/**
 * A command whose subcommands call the service (`datasets …`, `zones …`): the service options on every one, and a
 * subcommand required, listing them, with the examples given.
 */
export function serviceCommandGroup<Args>(
  name: string,
  commands: CommandModule<Args, any>[],
  examples: [command: string, description: string][],
): CommandModule<object, Args> {
  const names = commands.map((c) => String(c.command).split(' ')[0]).join(', ');
  return {
    command: name,
    describe: `${name[0]!.toUpperCase()}${name.slice(1)}: ${names}`,
    builder: (y) => {
      let b = serviceOptions(y as Argv<object>) as unknown as Argv<Args>;
      for (const c of commands) b = b.command(c);
      for (const [command, description] of examples) b = b.example(command, description);
      return b.demandCommand(1, `name a ${name} command: ${names}`).strict();
    },
    handler: () => undefined,
  };
}

/** One subcommand of a service command group, refusing options it does not know. */
export function subcommand<Args>(
  command: string,
  describe: string,
  builder: (y: Argv<Args>) => Argv<any>,
  handler: (args: Args) => Promise<void>,
): CommandModule<Args, Args> {
  // yargs types the parsed arguments as camel-cased too; the handlers read them as declared.
  return { command, describe, builder: (y) => builder(y).strict(), handler: (a) => handler(a as Args) };
}

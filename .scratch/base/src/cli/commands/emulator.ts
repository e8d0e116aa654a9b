/** `sluice emulator`: the whole service on a local port, with deterministic data, until Ctrl-C. */
import path from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { SluiceError } from '../../core/errors.js';
import type { CliContext } from '../context.js';

interface EmulatorArgs {
  port: number;
  host: string;
  seed?: number;
  size?: number;
  'api-key'?: string;
  faults?: string;
  'time-scale'?: number;
  'latency-ms'?: number;
  'state-file'?: string;
  now?: string;
}

function nonNegativeInt(name: string) {
  return (v: unknown): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number ≥ 0 (got "${String(v)}")`);
    return n;
  };
}

export function emulatorCommand(ctx: CliContext): CommandModule<object, EmulatorArgs> {
  return {
    command: 'emulator',
    describe: 'Serve the emulated service (every endpoint, deterministic data, optional faults) until Ctrl-C',
    builder: (y) =>
      y
        .option('port', {
          type: 'number',
          default: 8080,
          coerce: nonNegativeInt('port'),
          describe: 'Port (0: any free one)',
        })
        .option('host', { type: 'string', default: '127.0.0.1', describe: 'Address to listen on' })
        .option('seed', {
          type: 'number',
          coerce: nonNegativeInt('seed'),
          describe: 'Seeds all generated data (default 1)',
        })
        .option('size', {
          type: 'number',
          coerce: nonNegativeInt('size'),
          describe: 'Records per dataset (default 10000)',
        })
        .option('api-key', {
          type: 'string',
          describe: 'The key the emulator accepts (default: $SLUICE_API_KEY, else emulator-key)',
        })
        .option('faults', { type: 'string', describe: 'Fault-injection YAML file (429s, 5xx, resets, slow bodies…)' })
        .option('time-scale', {
          type: 'number',
          describe: 'Emulated time runs this many times faster (filter jobs finish sooner)',
        })
        .option('latency-ms', {
          type: 'number',
          coerce: nonNegativeInt('latency-ms'),
          describe: 'Added to every response',
        })
        .option('state-file', {
          type: 'string',
          describe:
            'Keep snapshots, lookup requests, zones and paid counters in this file, so a restarted emulator still knows them',
        })
        .option('now', {
          type: 'string',
          describe:
            'Start the emulated clock at this ISO date; new records and reviews then appear as it passes them (move it with POST /_emulator/clock)',
        })
        .check((a) => {
          if (a['time-scale'] !== undefined && !(a['time-scale'] > 0)) throw new Error('--time-scale must be > 0');
          if (a.now !== undefined && !Number.isFinite(Date.parse(a.now)))
            throw new Error(`--now must be an ISO date such as 2025-03-01T02:30:00Z (got "${a.now}")`);
          return true;
        })
        .example('$0 emulator --port 8080 --seed 1 --size 100000', 'Serve 100k records per dataset on :8080')
        .example('$0 emulator --faults faults.yaml --time-scale 10', 'With injected faults, jobs 10× faster')
        .example('$0 emulator --state-file emulator.json', 'Snapshots and requests outlive a restart')
        .example('$0 emulator --now 2025-03-01T02:30:00Z', 'A calendar under which the data grows night by night')
        .strict() as unknown as Argv<EmulatorArgs>,
    handler: async (args) => {
      const { loadFaultsFile, startEmulator } = await import('../../emulator/server.js');
      const emulator = await startEmulator({
        port: args.port,
        host: args.host,
        apiKey: args['api-key'] ?? ctx.io.env.SLUICE_API_KEY ?? 'emulator-key',
        ...(args.seed !== undefined && { seed: args.seed }),
        ...(args.size !== undefined && { size: args.size }),
        ...(args['time-scale'] !== undefined && { timeScale: args['time-scale'] }),
        ...(args['latency-ms'] !== undefined && { latencyMs: args['latency-ms'] }),
        ...(args.faults !== undefined && { faults: loadFaultsFile(path.resolve(args.faults)) }),
        ...(args['state-file'] !== undefined && { stateFile: path.resolve(args['state-file']) }),
        ...(args.now !== undefined && { now: Date.parse(args.now) }),
      }).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'EADDRINUSE' || err.code === 'EACCES')
          throw new SluiceError(
            `cannot listen on ${args.host}:${args.port}: ${err.code === 'EADDRINUSE' ? 'the port is in use' : 'permission denied'}`,
            {
              hint: 'pick another port with --port (0 takes any free one)',
            },
          );
        throw err;
      });
      ctx.io.out(`emulator listening on ${emulator.url}`);
      if (emulator.resumed) ctx.io.err(`resumed the emulator's state from ${path.resolve(args['state-file']!)}`);
      ctx.io.err(`point sluice at it: SLUICE_BASE_URL=${emulator.url} (Ctrl-C stops it)`);
      await ctx.io.untilStopped();
      await emulator.close();
      ctx.io.err('emulator stopped');
    },
  };
}

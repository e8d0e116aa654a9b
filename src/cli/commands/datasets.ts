/**
 * `sluice datasets …`: the dataset endpoints of the service, JSON on stdout. `download` streams to a file (written
 * under a temporary name and renamed when complete, so a cut download never looks finished); `filter` starts a paid
 * job and needs `--yes`.
 */
import { createWriteStream } from 'node:fs';
import { readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Argv, CommandModule } from 'yargs';
import { jsonArg, positiveInt } from '../args.js';
import type { CliContext } from '../context.js';
import { SluiceError } from '../../core/errors.js';
import { readJsonFile } from '../../core/json-file.js';
import { UsageError } from '../report.js';
import { requireYes, serviceCommandGroup, subcommand, withClient, type ServiceArgs } from '../service-client.js';

type Args = ServiceArgs & Record<string, any>;

function downloadOptions(y: Argv<any>): Argv<Args> {
  return y
    .option('format', { choices: ['jsonl', 'json', 'csv'], default: 'jsonl', describe: 'Format of the records' })
    .option('compress', { type: 'boolean', default: false, describe: 'Ask for a gzip body' })
    .option('batch-size', {
      type: 'number',
      coerce: (v: unknown) => {
        const n = positiveInt('batch-size')(v);
        if (n < 1000) throw new Error('--batch-size must be at least 1000 (the service’s minimum)');
        return n;
      },
      describe: 'Records per part (at least 1000)',
    }) as unknown as Argv<Args>;
}

function downloadParams(a: Args) {
  return {
    format: a.format as 'jsonl' | 'json' | 'csv',
    compress: Boolean(a.compress),
    ...(a['batch-size'] !== undefined && { batch_size: Number(a['batch-size']) }),
  };
}

export function datasetsCommand(ctx: CliContext): CommandModule<object, Args> {
  const print = (value: unknown): void => ctx.io.out(JSON.stringify(value, null, 2));

  const sub = subcommand<Args>;

  const commands: CommandModule<Args, Args>[] = [
    sub(
      'list',
      'List the datasets (id, name, records)',
      (y) => y.example('$0 datasets list', 'The catalogue'),
      (a) => withClient(ctx.io, a, (c) => c.datasets.list()).then(print),
    ),
    sub(
      'metadata <dataset_id>',
      'Fields of a dataset (type, description); the service publishes them for some datasets only',
      (y) =>
        y
          .positional('dataset_id', { type: 'string', demandOption: true, describe: 'Dataset id (gd_…)' })
          .example('$0 datasets metadata gd_l1vikfnt1wgvvqz95w', 'What can be filtered on'),
      (a) =>
        withClient(ctx.io, a, (c) =>
          c.datasets.metadata(String(a.dataset_id)).catch((err: unknown) => {
            // Most datasets answer 404 here though they exist (docs/service.md §3.2): say so, not "no such dataset".
            // (Read by shape: --help must not load the client to show this command.)
            if (err instanceof SluiceError && (err as { status?: unknown }).status === 404)
              throw new SluiceError(`no metadata for ${String(a.dataset_id)} (${err.message})`, {
                hint: 'the service describes only a minority of its datasets: `sluice datasets list` shows whether the id exists, and the records of one of its snapshots show the fields',
                cause: err,
              });
            throw err;
          }),
        ).then(print),
    ),
    sub(
      'snapshot <snapshot_id>',
      'Status and size of a snapshot',
      (y) =>
        y
          .positional('snapshot_id', { type: 'string', demandOption: true, describe: 'Snapshot id (snap_…)' })
          .example('$0 datasets snapshot snap_m2bxug4e2o352v1jv1', 'scheduled, building, ready or failed'),
      (a) => withClient(ctx.io, a, (c) => c.datasets.snapshot(String(a.snapshot_id))).then(print),
    ),
    sub(
      'parts <snapshot_id>',
      'How many parts a snapshot downloads in, for a format and batch size',
      (y) =>
        downloadOptions(
          y.positional('snapshot_id', { type: 'string', demandOption: true, describe: 'Snapshot id (snap_…)' }),
        ).example('$0 datasets parts snap_m2bxug4e2o352v1jv1 --batch-size 10000', 'Parts of 10k records'),
      (a) => withClient(ctx.io, a, (c) => c.datasets.parts(String(a.snapshot_id), downloadParams(a))).then(print),
    ),
    sub(
      'download <snapshot_id>',
      'Stream a snapshot (or one part of it) to a file',
      (y) =>
        downloadOptions(
          y
            .positional('snapshot_id', { type: 'string', demandOption: true, describe: 'Snapshot id (snap_…)' })
            .option('out', { type: 'string', demandOption: true, describe: 'File to write' })
            .option('part', {
              type: 'number',
              coerce: positiveInt('part'),
              describe: 'Only this part (from 1; needs --batch-size)',
            }),
        )
          .check((a) => {
            if (a.part !== undefined && a['batch-size'] === undefined) throw new Error('--part needs --batch-size');
            return true;
          })
          .example('$0 datasets download snap_m2bxug4e2o352v1jv1 --out profiles.jsonl', 'The whole snapshot')
          .example(
            '$0 datasets download snap_m2bxug4e2o352v1jv1 --compress --batch-size 10000 --part 2 --out p2.jsonl.gz',
            'The second part of 10k records, gzipped',
          ),
      async (a) => {
        const out = path.resolve(String(a.out));
        const partial = `${out}.part`;
        await withClient(ctx.io, a, async (c) => {
          const download = await c.datasets.download(String(a.snapshot_id), {
            ...downloadParams(a),
            ...(a.part !== undefined && { part: Number(a.part) }),
          });
          try {
            await pipeline(download.body, createWriteStream(partial));
            await rename(partial, out);
          } catch (err) {
            await rm(partial, { force: true });
            throw err;
          }
        });
        print({ snapshot_id: a.snapshot_id, out, bytes: (await stat(out)).size });
      },
    ),
    sub(
      'filter <dataset_id>',
      'Start a filter job that creates a snapshot (paid; needs --yes)',
      (y) =>
        y
          .positional('dataset_id', { type: 'string', demandOption: true, describe: 'Dataset id (gd_…)' })
          .option('filter', {
            coerce: jsonArg('filter'),
            describe: 'The filter as JSON: {name, operator, value} or a group',
          })
          .option('filter-file', { type: 'string', describe: 'A JSON file holding the filter' })
          .option('file', {
            type: 'string',
            array: true,
            describe: 'Files with filter values (CSV or JSON), named by their file name in the filter',
          })
          .option('records-limit', {
            type: 'number',
            coerce: positiveInt('records-limit'),
            describe: 'Most records the job places in the snapshot, and so is charged for (required unless --uncapped)',
          })
          .option('uncapped', {
            type: 'boolean',
            default: false,
            describe: 'Start the job without --records-limit: every matching record is charged',
          })
          .option('yes', { type: 'boolean', default: false, describe: 'Confirm: this starts a paid job' })
          .check((a) => {
            // UsageError, not Error: a plain Error thrown here would be reported as a bug (exit 1), not a usage one.
            if ((a.filter === undefined) === (a['filter-file'] === undefined))
              throw new UsageError(
                'give the filter with --filter or with --filter-file (one of them)',
                'e.g. --filter \'{"name":"followers","operator":">","value":1000}\'',
              );
            // The vendor's own CLI requires a limit too: without one the job charges for every matching record.
            if ((a['records-limit'] === undefined) === (a.uncapped !== true))
              throw new UsageError(
                'give --records-limit N (the most records the job may place in the snapshot, and charge for), or --uncapped (one of them)',
                'a filter job is charged per record: --records-limit caps it; --uncapped starts a job without a cap',
              );
            return true;
          })
          .example(
            `$0 datasets filter gd_l1vikfnt1wgvvqz95w --filter '{"name":"followers","operator":">","value":1000}' --records-limit 5000 --yes`,
            'Start a job; `datasets snapshot <id>` follows it',
          )
          .example(
            `$0 datasets filter gd_l1vikfnt1wgvvqz95w --filter '{"name":"country_code","operator":"in","value":"countries.csv"}' --file countries.csv --records-limit 1000 --yes`,
            'Filter values from an uploaded CSV',
          ),
      async (a) => {
        requireYes(a, `datasets filter ${a.dataset_id}`);
        const filter = a['filter-file'] !== undefined ? await readFilterFile(String(a['filter-file'])) : a.filter;
        const files = await Promise.all(
          ((a.file as string[] | undefined) ?? []).map(async (f) => ({
            name: path.basename(f),
            content: await readFile(f).catch((err: Error) => {
              throw new UsageError(`cannot read --file ${f}: ${err.message}`, 'pass existing CSV or JSON files');
            }),
          })),
        );
        const result = await withClient(ctx.io, a, (c) =>
          c.datasets.filter({
            dataset_id: String(a.dataset_id),
            filter,
            ...(a['records-limit'] !== undefined && { records_limit: Number(a['records-limit']) }),
            ...(files.length > 0 && { files }),
          }),
        );
        print(result);
      },
    ),
  ];

  return serviceCommandGroup('datasets', commands, [
    ['$0 datasets list', 'The catalogue (SLUICE_BASE_URL, SLUICE_API_KEY)'],
    ['$0 datasets list --base-url emulator', 'Try it offline against the embedded emulator'],
  ]);
}

function readFilterFile(file: string): Promise<unknown> {
  return readJsonFile(file, {
    unreadable: (err) =>
      new UsageError(`cannot read --filter-file ${file}: ${err.message}`, 'pass an existing JSON file'),
    invalid: (err) => new UsageError(`--filter-file ${file} is not valid JSON: ${err.message}`, 'fix the JSON'),
  });
}

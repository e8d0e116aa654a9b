/**
 * The bad-input corpus: every way a user, the environment, the service or the data can be wrong, and what sluice
 * does about it. Each fatal case ends with one `error:` line and one `fix:` line that says what to change, exits
 * non-zero, and commits nothing (see harness.ts for what "nothing" is checked against). Bad records are not fatal:
 * they become dead letters with the reason and offset, and the good records are committed.
 *
 * What the corpus files (bad-input/*.test.ts) share: the emulator each file runs against, the pipeline pieces the
 * cases are made of, and `run`, which writes a case into a fresh workspace and runs the CLI on it.
 */
import { afterAll, beforeAll } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/server.js';
import { KEY, cli, workspace as newWorkspace, type Result, type Workspace } from './harness.js';

export const DATASET = 'gd_l1vikfnt1wgvvqz95w';

/** The emulator of the test file running now (set by `useEmulator`). */
export let emu: EmulatorHandle;

/** A fresh workspace, removed after the test file that made it (harness.ts: test/support/file-cleanup.ts). */
export const workspace = (): Workspace => newWorkspace();

/** Starts an emulator for the calling test file before its tests and stops it after them. */
export function useCorpus(): void {
  beforeAll(async () => {
    emu = await startEmulator({ apiKey: KEY, seed: 5, size: 2000, timeScale: 50 });
  });
  afterAll(async () => {
    await emu?.close();
  });
}

export const env = (service: { url: string } = emu): Record<string, string> => ({
  SLUICE_BASE_URL: service.url,
  SLUICE_API_KEY: KEY,
});

/** The head every pipeline of the corpus shares: the service from the environment, no retries to wait out. */
export const HEAD = [
  'version: 1',
  'name: bad_input',
  'service:',
  '  base_url: ${SLUICE_BASE_URL}',
  '  api_key: ${SLUICE_API_KEY}',
  '  retry: { retries: 1, base_delay_ms: 10, max_delay_ms: 20 }',
  '',
].join('\n');

export const FILTER_SOURCE = [
  'source:',
  '  type: snapshot',
  `  dataset_id: ${DATASET}`,
  "  filter: { name: followers, operator: '>', value: 100 }",
  '  records_limit: 500',
  '  download: { format: jsonl, batch_size: 1000 }',
  '  poll: { interval_ms: 20 }',
  '',
].join('\n');

export const JSONL_SINK = 'sink: { type: jsonl, path: out }\n';

export interface Ran extends Result {
  ws: Workspace;
  before: Set<string>;
}

/** Writes `files` (the pipeline as p.yaml) into a fresh workspace and runs `argv` (`{p}` = the pipeline file). */
export async function run(
  files: Record<string, string | Buffer>,
  argv: string[] = ['run', '{p}', '--no-progress'],
  environment: Record<string, string> = env(),
): Promise<Ran> {
  const ws = workspace();
  for (const [name, content] of Object.entries(files)) ws.write(name, content);
  const before = ws.files();
  const r = await cli(
    argv.map((a) => a.replace('{p}', ws.path('p.yaml'))),
    environment,
  );
  return { ...r, ws, before };
}

/** Paid filter jobs the shared emulator started so far. */
export const filterJobs = (e: EmulatorHandle = emu): number => e.stats.paid.filter ?? 0;

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';

const root = path.resolve(import.meta.dirname, '../..');
const KEY = 'secret-key-for-the-log-test-5150';

function serpPipeline(baseUrl: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-secrets-'));
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'name: secrets_test',
      'service:',
      `  base_url: ${baseUrl}`,
      '  api_key: ${SLUICE_API_KEY}',
      '  retry: { retries: 0 }',
      'source: { type: serp, zone: serp_zone, queries: [coffee], max_pages: 1 }',
      'sink: { type: jsonl, path: out }',
      '',
    ].join('\n'),
  );
  return file;
}

/** Asynchronous, so the emulator in this process can answer the child. */
function sluiceAsync(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['bin/sluice.js', ...args], {
      cwd: root,
      env: { ...process.env, SLUICE_API_KEY: KEY },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function sluice(...args: string[]) {
  const env = { ...process.env, SLUICE_API_KEY: KEY };
  return spawnSync(process.execPath, ['bin/sluice.js', ...args], { cwd: root, env, encoding: 'utf8' });
}

describe('the API key never reaches the output', () => {
  it('in JSON logs and the JSON summary of a run', () => {
    const r = sluice('run', serpPipeline('emulator'), '--log-format', 'json', '--no-progress');
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(JSON.parse(line)).toHaveProperty('level');
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', pipeline: 'secrets_test' });
    expect(r.stdout + r.stderr).not.toContain(KEY);
  });

  it('in the error of a run whose key the service refuses', async () => {
    const emulator = await startEmulator({ apiKey: 'another-key' });
    try {
      const r = await sluiceAsync('run', serpPipeline(emulator.url), '--log-format', 'json', '--no-progress');
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/^error: .*401.*$/m);
      expect(r.stderr).toMatch(/^ {2}fix: .+$/m);
      expect(r.stdout + r.stderr).not.toContain(KEY);
    } finally {
      await emulator.close();
    }
  });
});

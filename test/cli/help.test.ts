import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from './memory-io.js';

const commands = [
  [],
  ['run'],
  ['validate'],
  ['plan'],
  ['dead-letters'],
  ['emulator'],
  ['zones'],
  ['zones', 'active'],
  ['zones', 'countries'],
  ['zones', 'cost'],
  ['zones', 'create'],
  ['zones', 'refresh-ips'],
  ['zones', 'remove-domain'],
  ['datasets'],
  ['datasets', 'list'],
  ['datasets', 'metadata'],
  ['datasets', 'snapshot'],
  ['datasets', 'parts'],
  ['datasets', 'download'],
  ['datasets', 'filter'],
];

describe('--help', () => {
  it.each(commands.map((c) => [c.join(' ') || '(top level)', c] as const))(
    '%s exits 0 and shows examples',
    async (_, command) => {
      const io = memoryIo();
      expect(await runCli([...command, '--help'], io)).toBe(0);
      const text = io.stdout.join('\n');
      expect(text).toContain(`sluice ${command.join(' ')}`.trim());
      expect(text).toContain('Examples:');
      expect(io.stderr).toEqual([]);
    },
  );

  it('documents the run options', async () => {
    const io = memoryIo();
    await runCli(['run', '--help'], io);
    const text = io.stdout.join('\n');
    for (const option of ['--fresh', '--shard', '--log-format', '--quiet', '--show', '--progress'])
      expect(text).toContain(option);
  });

  it('offers no flag that takes the API key itself', async () => {
    for (const group of ['zones', 'datasets']) {
      const io = memoryIo();
      await runCli([group, '--help'], io);
      const text = io.stdout.join('\n');
      expect(text).toContain('--api-key-env');
      expect(text).not.toMatch(/--api-key\b(?!-env)/);
    }
  });
});

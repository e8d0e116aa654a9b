import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from './memory-io.js';

const root = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };

const commands = [
  [],
  ['init'],
  ['run'],
  ['prepare'],
  ['finalize'],
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
  ['report'],
  ['compact'],
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

/**
 * The repository's modules a CLI invocation imports (paths relative to the repository), recorded by a module
 * resolution hook in a child process that runs the TypeScript entry through tsx.
 */
function modulesImportedBy(args: string[]): string[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-imports-'));
  const log = path.join(dir, 'imported.txt');
  writeFileSync(log, '');
  const hooks = path.join(dir, 'hooks.mjs');
  // Appended synchronously: the hooks run on their own thread, whose stderr may be cut off by process.exit.
  writeFileSync(
    hooks,
    "import { appendFileSync } from 'node:fs';\n" +
      'export async function resolve(specifier, context, next) {\n' +
      '  const result = await next(specifier, context);\n' +
      `  if (result.url.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, result.url + '\\n');\n` +
      '  return result;\n' +
      '}\n',
  );
  const register = path.join(dir, 'register.mjs');
  writeFileSync(
    register,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--import', pathToFileURL(register).href, 'src/cli/main.ts', ...args],
    { cwd: root, encoding: 'utf8' },
  );
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return [
    ...new Set(
      readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((url) => path.relative(root, fileURLToPath(url))),
    ),
  ].filter((file) => !file.startsWith('node_modules') && !file.startsWith('..'));
}

/** What commands do, as opposed to what they are: none of it may be imported to show help. */
const COMMAND_WORK =
  /^(src\/(emulator|pipeline|sources|transforms|decode|client|schema)\/|src\/engine\/(?!logger\.ts$)|sinks\/)/;

describe('start-up', () => {
  it("`--help` imports no command's work: no emulator, pipeline loader, engine, source or sink", () => {
    const imported = modulesImportedBy(['--help']);
    expect(imported).toContain('src/cli/commands/run.ts');
    expect(imported.filter((file) => COMMAND_WORK.test(file))).toEqual([]);
  });

  it("a command's `--help` imports only that command's module", () => {
    const imported = modulesImportedBy(['zones', '--help']);
    expect(imported.filter((file) => file.startsWith('src/cli/commands/'))).toEqual(['src/cli/commands/zones.ts']);
    expect(imported.filter((file) => COMMAND_WORK.test(file))).toEqual([]);
  });
});

describe('the compiled executable (bin/sluice.js → dist/, built by `npm run build`)', () => {
  const bin = (...args: string[]) =>
    spawnSync(process.execPath, [path.join(root, 'bin/sluice.js'), ...args], { cwd: root, encoding: 'utf8' });

  it('shows help and the package version', () => {
    const help = bin('--help');
    expect(help.stderr, 'is dist/ built? run `npm run build`').toBe('');
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('sluice run <pipeline>');
    const version = bin('--version');
    expect(version.stdout.trim()).toBe(pkg.version);
    expect(version.status).toBe(0);
  });

  it('says how to build it when dist/ is missing', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-unbuilt-'));
    mkdirSync(path.join(dir, 'bin'));
    copyFileSync(path.join(root, 'bin/sluice.js'), path.join(dir, 'bin/sluice.js'));
    const r = spawnSync(process.execPath, [path.join(dir, 'bin/sluice.js'), '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('sluice is not built');
    expect(r.stderr).toContain('npm run build');
  });
});

/**
 * The servers the suite runs for real that come from the system's packages, not from npm: found where the package
 * puts them, installed by the suite itself when they are missing (as root, with apt: a fresh machine of CI's kind
 * passes `npm test` with nothing installed by hand), and otherwise named once at the top of the run with the one
 * command that brings them in — their tests are then skipped, never failed for a missing install.
 *
 * The global setup (test/global-setup.ts) calls `installMissing()` once per run, before any worker starts; a test
 * file asks `systemBinary(name)` and skips its servers' tests when it answers undefined.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export interface SystemPackage {
  /** Debian's package that holds the binary. */
  debian: string;
  /** Where the package installs it, then names looked up on PATH. */
  paths: string[];
  commands: string[];
  /** A variable that names the binary elsewhere (a build of one's own). */
  env: string;
  /** For the notice of skipped tests. */
  usedBy: string;
}

export const SYSTEM_PACKAGES = {
  pushgateway: {
    debian: 'prometheus-pushgateway',
    paths: ['/usr/bin/prometheus-pushgateway'],
    commands: ['prometheus-pushgateway', 'pushgateway'],
    env: 'SLUICE_PUSHGATEWAY',
    usedBy: 'the metrics tests (test/observe/metrics.test.ts)',
  },
  clickhouse: {
    debian: 'clickhouse-server',
    paths: ['/usr/sbin/clickhouse-server', '/usr/bin/clickhouse-server'],
    commands: ['clickhouse-server'],
    env: 'SLUICE_CLICKHOUSE_SERVER',
    usedBy: 'the ClickHouse sink tests (the conformance target, test/sinks/clickhouse/, test/e2e/clickhouse-*.test.ts)',
  },
  'clickhouse-client': {
    debian: 'clickhouse-client',
    paths: ['/usr/bin/clickhouse-client'],
    commands: ['clickhouse-client'],
    env: 'SLUICE_CLICKHOUSE_CLIENT',
    usedBy: 'the ClickHouse bulk-insert floor of `npm run bench` (bench/cases/clickhouse.ts)',
  },
} satisfies Record<string, SystemPackage>;

export type SystemPackageName = keyof typeof SYSTEM_PACKAGES;

/** The binary's path, or undefined when it is not on this machine. */
export function systemBinary(name: SystemPackageName): string | undefined {
  const pkg: SystemPackage = SYSTEM_PACKAGES[name];
  for (const candidate of [process.env[pkg.env], ...pkg.paths])
    if (candidate && existsSync(candidate)) return candidate;
  for (const command of pkg.commands) {
    const which = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
    if (which.status === 0 && which.stdout.trim()) return which.stdout.trim().split('\n')[0]!;
  }
  return undefined;
}

/** The one command that brings in what is missing, for people and for the notice. */
export function installCommand(names: readonly SystemPackageName[]): string {
  return `apt-get install -y ${names.map((n) => SYSTEM_PACKAGES[n].debian).join(' ')}`;
}

export interface InstallReport {
  /** Installed by this call. */
  installed: SystemPackageName[];
  /** Still missing, and why they could not be installed. */
  missing: SystemPackageName[];
  why?: string;
}

/**
 * Installs the missing packages with apt when the suite runs as root on a Debian-like system; the package index is
 * refreshed first only when an install without it fails (a fresh image's index is often empty or stale).
 */
export function installMissing(names: readonly SystemPackageName[] = allNames()): InstallReport {
  const missing = names.filter((n) => systemBinary(n) === undefined);
  if (missing.length === 0) return { installed: [], missing: [] };
  const why = cannotInstall();
  if (why !== undefined) return { installed: [], missing, why };
  const packages = missing.map((n) => SYSTEM_PACKAGES[n].debian);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = (): ReturnType<typeof spawnSync> =>
    spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { env, encoding: 'utf8' });
  let result = install();
  if (result.status !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { env, encoding: 'utf8' });
    result = install();
  }
  const still = missing.filter((n) => systemBinary(n) === undefined);
  return {
    installed: missing.filter((n) => !still.includes(n)),
    missing: still,
    ...(still.length > 0 && {
      why: `apt-get failed: ${
        String(result.stderr ?? '')
          .trim()
          .split('\n')
          .pop() ?? ''
      }`,
    }),
  };
}

function allNames(): SystemPackageName[] {
  return Object.keys(SYSTEM_PACKAGES) as SystemPackageName[];
}

function cannotInstall(): string | undefined {
  if (process.platform !== 'linux') return `${process.platform} has no apt`;
  if (process.getuid?.() !== 0) return 'not running as root';
  if (spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).status !== 0) return 'no apt-get here';
  if (process.env.SLUICE_NO_INSTALL === '1') return 'SLUICE_NO_INSTALL=1';
  return undefined;
}

/** The notice printed once at the top of the run: what was installed, what is skipped, and the command. */
export function installNotice(report: InstallReport): string | undefined {
  const lines: string[] = [];
  for (const n of report.installed)
    lines.push(`installed ${SYSTEM_PACKAGES[n].debian} for ${SYSTEM_PACKAGES[n].usedBy}`);
  if (report.missing.length > 0) {
    lines.push(
      `SKIPPED (${report.why ?? 'not installed'}): ${report.missing.map((n) => SYSTEM_PACKAGES[n].usedBy).join('; ')}`,
      `  bring them in with: ${installCommand(report.missing)}`,
    );
  }
  return lines.length > 0 ? lines.map((l) => `system packages: ${l}`).join('\n') + '\n' : undefined;
}

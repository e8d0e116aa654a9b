/**
 * The servers the suite runs for real that come from the system's packages, not from npm: found where the package
 * puts them, installed by the suite itself when they are missing (as root, with apt: a fresh machine of CI's kind
 * passes `npm test` with nothing installed by hand), and otherwise named once at the top of the run with the one
 * command that brings them in — their tests are then skipped, never failed for a missing install.
 *
 * The global setup (test/global-setup.ts) calls `installMissing()` once per run, before any worker starts; a test
 * file asks `hasSystemPackage(name)` and skips its servers' tests when it answers false.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

export interface SystemPackage {
  /** Debian's package that holds the binary. */
  debian: string;
  /** Where the package installs it, then names looked up on PATH. */
  paths: string[];
  commands: string[];
  /** A variable that names the binary elsewhere (a build of one's own)... */
  env: string;
  /** ...or, when set, the directory holding it: the binary is this name inside it. */
  envDirHolds?: string;
  /**
   * A server that refuses to run as root runs as this OS user when the tests run as root. The package creates it;
   * where the binaries came from elsewhere, the global setup creates it as the package would.
   */
  runAsUser?: { name: string; home: string; comment: string };
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
  postgres: {
    debian: 'postgresql-15',
    // Debian keeps initdb off PATH (its wrappers cover the clients only); other systems put it there.
    paths: ['/usr/lib/postgresql/15/bin/initdb'],
    commands: ['initdb'],
    env: 'SLUICE_PG_BINDIR',
    envDirHolds: 'initdb',
    runAsUser: { name: 'postgres', home: '/var/lib/postgresql', comment: 'PostgreSQL administrator' },
    usedBy:
      'the tests against a real PostgreSQL (test/support/postgres-server.ts: test/sinks/postgres/, the Postgres conformance targets, test/e2e/postgres*.test.ts and the other files that start one)',
  },
  python3: {
    debian: 'python3',
    paths: ['/usr/bin/python3'],
    commands: ['python3'],
    env: 'SLUICE_PYTHON3',
    usedBy: "the Airflow recipe's compile check (test/deploy/recipes.test.ts)",
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
  if (pretendMissing().includes(name)) return undefined;
  const pkg: SystemPackage = SYSTEM_PACKAGES[name];
  const fromEnv = process.env[pkg.env];
  const named = fromEnv && pkg.envDirHolds ? path.join(fromEnv, pkg.envDirHolds) : fromEnv;
  for (const candidate of [named, ...pkg.paths]) if (candidate && existsSync(candidate)) return candidate;
  for (const command of pkg.commands) {
    const which = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
    if (which.status === 0 && which.stdout.trim()) return which.stdout.trim().split('\n')[0]!;
  }
  return undefined;
}

/** The OS user the server must run as here: set only when the tests run as root and the package names one. */
export function runAsUser(name: SystemPackageName): string | undefined {
  const user = (SYSTEM_PACKAGES[name] as SystemPackage).runAsUser;
  return user && process.getuid?.() === 0 ? user.name : undefined;
}

/** What the package's tests need is here: its binary, and the user it runs as when the tests run as root. */
export function hasSystemPackage(name: SystemPackageName): boolean {
  const user = runAsUser(name);
  return systemBinary(name) !== undefined && (user === undefined || userExists(user));
}

function userExists(user: string): boolean {
  return spawnSync('id', ['-u', user], { stdio: 'ignore' }).status === 0;
}

/** The one command that brings in what is missing, for people and for the notice. */
export function installCommand(names: readonly SystemPackageName[]): string {
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  return `${sudo}apt-get install -y ${names.map((n) => SYSTEM_PACKAGES[n].debian).join(' ')}`;
}

export interface InstallReport {
  /** Installed by this call. */
  installed: SystemPackageName[];
  /** OS users created by this call, for servers that run as one (`runAsUser`). */
  users: string[];
  /** Still missing, and why they could not be installed. */
  missing: SystemPackageName[];
  why?: string;
}

/**
 * Installs the missing packages with apt when the suite runs as root on a Debian-like system; the package index is
 * refreshed first only when an install without it fails (a fresh image's index is often empty or stale). Then, as
 * root, creates the OS user a server runs as when its binaries came without it (a build of one's own, a package
 * whose user was removed).
 */
export function installMissing(names: readonly SystemPackageName[] = allNames()): InstallReport {
  const report: InstallReport = { installed: [], users: [], missing: [] };
  const pretended = names.filter((n) => pretendMissing().includes(n));
  const why = cannotInstall();
  let failed: string | undefined;
  const absent = names.filter((n) => systemBinary(n) === undefined && !pretended.includes(n));
  if (absent.length > 0 && why === undefined) {
    failed = aptInstall(absent.map((n) => SYSTEM_PACKAGES[n].debian));
    report.installed = absent.filter((n) => systemBinary(n) !== undefined);
  }
  for (const n of names) {
    const user = runAsUser(n);
    if (
      why !== undefined ||
      pretended.includes(n) ||
      user === undefined ||
      systemBinary(n) === undefined ||
      userExists(user)
    )
      continue;
    const created = createUser((SYSTEM_PACKAGES[n] as SystemPackage).runAsUser!);
    if (created === undefined) report.users.push(user);
    else failed ??= created;
  }
  report.missing = names.filter((n) => !hasSystemPackage(n));
  if (report.missing.some((n) => !pretended.includes(n))) report.why = why ?? failed ?? 'not found after installing';
  else if (report.missing.length > 0) report.why = `SLUICE_PRETEND_MISSING=${pretended.join(',')}`;
  return report;
}

/** undefined when it worked; else apt's last line of complaint. */
function aptInstall(packages: string[]): string | undefined {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // Another process (a second test run, the machine's own updates) may hold dpkg's lock for a while.
  const lock = ['-o', 'DPkg::Lock::Timeout=300'];
  const install = (): ReturnType<typeof spawnSync> =>
    spawnSync('apt-get', [...lock, 'install', '-y', '-qq', '--no-install-recommends', ...packages], {
      env,
      encoding: 'utf8',
    });
  let result = install();
  if (result.status !== 0) {
    spawnSync('apt-get', [...lock, 'update', '-qq'], { env, encoding: 'utf8' });
    result = install();
  }
  return result.status === 0 ? undefined : `apt-get failed: ${lastLine(result)}`;
}

/** As the package's own scripts create it: a system user and group, no home directory made. */
function createUser(user: NonNullable<SystemPackage['runAsUser']>): string | undefined {
  const made = spawnSync(
    'useradd',
    [
      '--system',
      '--user-group',
      '--no-create-home',
      '--home-dir',
      user.home,
      '--shell',
      '/bin/bash',
      '--comment',
      user.comment,
      user.name,
    ],
    { encoding: 'utf8' },
  );
  return made.status === 0 ? undefined : `useradd ${user.name} failed: ${lastLine(made)}`;
}

function lastLine(result: ReturnType<typeof spawnSync>): string {
  return (
    String(result.stderr ?? result.error?.message ?? '')
      .trim()
      .split('\n')
      .pop() ?? ''
  );
}

/**
 * SLUICE_PRETEND_MISSING=postgres,pushgateway: those are treated as absent and not installable, to see on a machine
 * that has them what a machine without them runs (their tests skipped, the notice).
 */
function pretendMissing(): string[] {
  return (process.env.SLUICE_PRETEND_MISSING ?? '').split(',').map((n) => n.trim());
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
  for (const user of report.users) lines.push(`created the OS user ${user} (as root, the server runs as it)`);
  if (report.missing.length > 0) {
    lines.push(
      `SKIPPED (${report.why ?? 'not installed'}): ${report.missing.map((n) => SYSTEM_PACKAGES[n].usedBy).join('; ')}`,
      `  bring them in with: ${installCommand(report.missing)}`,
    );
  }
  return lines.length > 0 ? lines.map((l) => `system packages: ${l}`).join('\n') + '\n' : undefined;
}

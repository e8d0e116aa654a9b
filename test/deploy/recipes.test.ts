/**
 * The scale-out recipes in deploy/ are checked, not only shown: the Kubernetes manifests parse and have the shape of
 * prepare → Indexed Job → finalize, their commands are ones this CLI accepts, and the Airflow DAG compiles. The image
 * they run is the repository's Dockerfile: its tag, Node version and user agree with package.json, .ci/run and the
 * recipes, and what it copies is in the packed package (the steps themselves: test/deploy/package.test.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../../src/cli/cli.js';
import { resolveShard } from '../../src/cli/commands/run.js';
import { memoryIo } from '../cli/memory-io.js';
import { systemBinary } from '../support/system-packages.js';

/** The CLI's error for `args` (the pipeline file in the recipes does not exist here). */
async function cliError(args: string[], env: Record<string, string>): Promise<string> {
  const io = memoryIo(env);
  expect(await runCli(args, io)).toBe(2);
  return io.stderr.join('\n');
}

const ROOT = path.resolve(import.meta.dirname, '../..');

type Obj = Record<string, any>;

const manifests = (): Obj[] =>
  parseAllDocuments(readFileSync(path.join(ROOT, 'deploy/kubernetes/indexed-job.yaml'), 'utf8')).map((d) => {
    expect(d.errors).toEqual([]);
    return d.toJS() as Obj;
  });

const byName = (name: string): Obj => {
  const m = manifests().find((x) => x.metadata?.name === name);
  expect(m, name).toBeDefined();
  return m!;
};

const container = (job: Obj): Obj => job.spec.template.spec.containers[0];
const envOf = (c: Obj): Record<string, Obj> => Object.fromEntries((c.env as Obj[]).map((e) => [e.name, e]));

describe('deploy/kubernetes/indexed-job.yaml', () => {
  it('is three batch/v1 Jobs: prepare, the indexed shards, finalize', () => {
    expect(manifests().map((m) => [m.apiVersion, m.kind, m.metadata.name, m.metadata.labels.step])).toEqual([
      ['batch/v1', 'Job', 'sluice-prepare', 'prepare'],
      ['batch/v1', 'Job', 'sluice-shards', 'shards'],
      ['batch/v1', 'Job', 'sluice-finalize', 'finalize'],
    ]);
  });

  it('the shards are an Indexed Job running `run --shard auto`, as many shards as completions', () => {
    const job = byName('sluice-shards');
    expect(job.spec.completionMode).toBe('Indexed');
    expect(job.spec.completions).toBe(4);
    expect(job.spec.parallelism).toBe(4);
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
    const c = container(job);
    expect(c.command.slice(0, 3)).toEqual(['sluice', 'run', '/etc/sluice/pipeline.yaml']);
    expect(c.command.join(' ')).toContain('--shard auto');
    const env = envOf(c);
    expect(env.SLUICE_SHARD_COUNT?.value).toBe(String(job.spec.completions));
    // The key is a secret reference, never a literal in the manifest.
    expect(env.SLUICE_API_KEY?.valueFrom?.secretKeyRef?.name).toBe('sluice-api');
    expect(env.SLUICE_API_KEY?.value).toBeUndefined();
    // What each pod resolves: its JOB_COMPLETION_INDEX within the count, for every index Kubernetes hands out.
    for (let i = 0; i < job.spec.completions; i++)
      expect(
        resolveShard('auto', undefined, {
          JOB_COMPLETION_INDEX: String(i),
          ...{ SLUICE_SHARD_COUNT: env.SLUICE_SHARD_COUNT!.value },
        }),
      ).toEqual({
        index: i,
        count: 4,
      });
  });

  it('prepare announces the shard count the shards use; finalize checks that many', () => {
    const prepare = container(byName('sluice-prepare')).command as string[];
    expect(prepare.slice(1, 3)).toEqual(['prepare', '/etc/sluice/pipeline.yaml']);
    expect(prepare[prepare.indexOf('--shards') + 1]).toBe('4');
    const finalize = container(byName('sluice-finalize')).command as string[];
    expect(finalize.slice(1, 3)).toEqual(['finalize', '/etc/sluice/pipeline.yaml']);
    expect(finalize[finalize.indexOf('--shard-count') + 1]).toBe('4');
  });

  it("every Job's command line is one this CLI accepts (it gets as far as reading the pipeline file)", async () => {
    for (const m of manifests()) {
      const env = Object.fromEntries(
        Object.entries(envOf(container(m))).flatMap(([k, v]) =>
          v.value !== undefined ? [[k, v.value as string]] : [],
        ),
      );
      expect(
        await cliError((container(m).command as string[]).slice(1), { JOB_COMPLETION_INDEX: '0', ...env }),
      ).toMatch(/pipeline\.yaml:1:1: cannot read the pipeline file/);
    }
  });

  it('every pod mounts the pipeline and the shared data volume', () => {
    for (const m of manifests()) {
      const mounts = (container(m).volumeMounts as Obj[]).map((v) => v.mountPath);
      expect(mounts).toEqual(['/etc/sluice', '/data']);
      expect((m.spec.template.spec.volumes as Obj[]).map((v) => v.name)).toEqual(['pipeline', 'data']);
    }
  });
});

describe('deploy/airflow/sluice_dag.py', () => {
  const dag = path.join(ROOT, 'deploy/airflow/sluice_dag.py');

  // python3 is a system package the global setup installs where it can; elsewhere named at the top of the run.
  const python3 = systemBinary('python3');
  it.skipIf(python3 === undefined)('compiles (python3 -m py_compile)', () => {
    const r = spawnSync(python3!, ['-m', 'py_compile', dag], {
      encoding: 'utf8',
      // The bytecode goes to a temp directory, not beside the recipe.
      env: { ...process.env, PYTHONPYCACHEPREFIX: mkdtempSync(path.join(tmpdir(), 'sluice-pyc-')) },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('runs prepare, then one pod per shard index, then finalize, each `sluice <command> <pipeline>`', () => {
    const text = readFileSync(dag, 'utf8');
    expect(text).toMatch(
      /cmds=\["sluice"\],\s+arguments=\[args\[0\], PIPELINE, \*args\[1:\], "--log-format", "json"\]/,
    );
    expect(text).toMatch(/sluice\("prepare", "prepare", "--shards", str\(SHARDS\)\)/);
    expect(text).toMatch(/sluice\("shard", "run", "--shard", "auto"\)/);
    expect(text).toMatch(
      /\.expand\(env_vars=\[\{\*\*SERVICE, "SLUICE_SHARD_INDEX": str\(i\), "SLUICE_SHARD_COUNT": str\(SHARDS\)\} for i in range\(SHARDS\)\]\)/,
    );
    expect(text).toMatch(
      /sluice\("finalize", "finalize", "--shard-count", str\(SHARDS\)\), env_vars=SERVICE, trigger_rule="all_done"/,
    );
    expect(text).toMatch(/prepare >> shard >> finalize/);
    // The key comes from a Secret: no literal in the DAG (`"SLUICE_API_KEY": "…"`).
    expect(text).toMatch(
      /Secret\(deploy_type="env", deploy_target="SLUICE_API_KEY", secret="sluice-api", key="api-key"\)/,
    );
    expect(text).not.toMatch(/SLUICE_API_KEY["']?\s*[:=]\s*["']/);
  });
});

describe('the image (Dockerfile) the recipes run', () => {
  const read = (f: string): string => readFileSync(path.join(ROOT, f), 'utf8');
  const dockerfile = read('Dockerfile');
  const pkg = JSON.parse(read('package.json')) as {
    name: string;
    version: string;
    bin: Record<string, string>;
    engines: { node: string };
  };
  const tag = `${pkg.name}:${pkg.version}`;
  /** The Dockerfile's instructions, continuation lines joined, comments dropped. */
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() && !l.trimStart().startsWith('#'));
  const stages = instructions.filter((l) => l.startsWith('FROM '));

  it('is the tag the recipes run, built as the Dockerfile says: <name>:<version> of package.json', () => {
    expect(dockerfile).toContain(`docker build -t ${tag} .`);
    for (const m of manifests()) expect(container(m).image, m.metadata.name).toBe(tag);
    const dag = read('deploy/airflow/sluice_dag.py');
    expect(dag).toContain(`IMAGE = "${tag}"`);
    for (const recipe of [read('deploy/kubernetes/indexed-job.yaml'), dag])
      expect(recipe).toContain(`docker build -t ${tag} .`);
  });

  it('runs a current LTS Node, the one CI runs the tests on besides the machine’s, within `engines`', () => {
    const major = Number(/^ARG NODE_VERSION=(\d+)$/m.exec(dockerfile)?.[1]);
    expect([22, 24]).toContain(major);
    expect(stages).toEqual([
      'FROM node:${NODE_VERSION}-bookworm-slim AS build',
      'FROM node:${NODE_VERSION}-bookworm-slim',
    ]);
    expect(Number(/^NODE_LTS=(\d+)$/m.exec(read('.ci/run'))?.[1])).toBe(major);
    expect(major).toBeGreaterThanOrEqual(Number(/^>=(\d+)\./.exec(pkg.engines.node)?.[1]));
  });

  it('runs as an unprivileged user, the one the recipes ask for, with the CLI as its entrypoint', () => {
    const runtime = instructions.slice(instructions.indexOf(stages[1]!));
    const user = runtime.filter((l) => l.startsWith('USER ')).pop();
    expect(user).toBe('USER 1000:1000');
    expect(runtime.indexOf(user!)).toBeLessThan(runtime.findIndex((l) => l.startsWith('ENTRYPOINT')));
    expect(runtime).toContain('ENTRYPOINT ["sluice"]');
    expect(runtime.join('\n')).toContain(`ln -s /opt/sluice/${pkg.bin.sluice} /usr/local/bin/sluice`);
    for (const m of manifests())
      expect(m.spec.template.spec.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 1000,
        fsGroup: 1000,
      });
    expect(read('deploy/airflow/sluice_dag.py')).toContain('run_as_non_root=True, run_as_user=1000');
  });

  it('copies what exists; its runtime stage takes the packed tarball alone (whose exact list: package.test.ts)', () => {
    const copies = instructions.filter((l) => l.startsWith('COPY ') && !l.includes('--from='));
    for (const c of copies) {
      const sources = c.split(/\s+/).slice(1, -1);
      for (const s of sources) expect(existsSync(path.join(ROOT, s)), c).toBe(true);
    }
    const runtime = instructions.slice(instructions.indexOf(stages[1]!));
    // From the build stage, the tarball only; from the context, the lockfile its `npm ci` installs from.
    expect(runtime.filter((l) => l.startsWith('COPY '))).toEqual([
      'COPY --from=build /tmp/sluice.tgz /tmp/sluice.tgz',
      'COPY package-lock.json ./',
    ]);
  });

  it('needs no install script of a production dependency (it installs them with --ignore-scripts)', () => {
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { dev?: boolean; hasInstallScript?: boolean }>;
    };
    const scripted = Object.entries(lock.packages).filter(([name, p]) => name && !p.dev && p.hasInstallScript);
    expect(scripted.map(([name]) => name)).toEqual([]);
  });
});

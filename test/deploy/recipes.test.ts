/**
 * The scale-out recipes in deploy/ are checked, not only shown: the Kubernetes manifests parse and have the shape of
 * prepare → Indexed Job → finalize, their commands are ones this CLI accepts, and the Airflow DAG compiles.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../../src/cli/cli.js';
import { resolveShard } from '../../src/cli/commands/run.js';
import { memoryIo } from '../cli/memory-io.js';

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
    expect(c.command.slice(0, 4)).toEqual(['npx', 'sluice', 'run', '/etc/sluice/pipeline.yaml']);
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
    expect(prepare.slice(2, 4)).toEqual(['prepare', '/etc/sluice/pipeline.yaml']);
    expect(prepare[prepare.indexOf('--shards') + 1]).toBe('4');
    const finalize = container(byName('sluice-finalize')).command as string[];
    expect(finalize.slice(2, 4)).toEqual(['finalize', '/etc/sluice/pipeline.yaml']);
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
        await cliError((container(m).command as string[]).slice(2), { JOB_COMPLETION_INDEX: '0', ...env }),
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

  it('compiles (python3 -m py_compile)', () => {
    const which = spawnSync('python3', ['--version'], { encoding: 'utf8' });
    if (which.error || which.status !== 0)
      throw new Error('python3 is needed to check deploy/airflow/sluice_dag.py: install python3 (3.8 or later)');
    const r = spawnSync('python3', ['-m', 'py_compile', dag], {
      encoding: 'utf8',
      // The bytecode goes to a temp directory, not beside the recipe.
      env: { ...process.env, PYTHONPYCACHEPREFIX: mkdtempSync(path.join(tmpdir(), 'sluice-pyc-')) },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('maps the shard task over the indexes prepare returns, then finalizes', () => {
    const text = readFileSync(dag, 'utf8');
    expect(text).toMatch(/finalize\(shard\.expand\(index=prepare\(\)\)\)/);
    expect(text).toMatch(/sluice\("prepare", "--shards", str\(SHARDS\)\)/);
    expect(text).toMatch(
      /sluice\("run", "--shard", "auto", env=\{"SLUICE_SHARD_INDEX": str\(index\), "SLUICE_SHARD_COUNT": str\(SHARDS\)\}\)/,
    );
    expect(text).toMatch(/sluice\("finalize", "--shard-count", str\(SHARDS\)\)/);
    // A key literal in the DAG (`"SLUICE_API_KEY": "…"`): the workers' environment holds it.
    expect(text).not.toMatch(/SLUICE_API_KEY["']?\s*[:=]\s*["']/);
  });
});

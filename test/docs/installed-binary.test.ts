/**
 * The command lines the docs, the deploy recipes, the example pipelines and `sluice init` give run the installed
 * `sluice` (npm's global bin after installing the packed tarball, the image's entrypoint) or, in a checkout, `npm exec
 * --no -- sluice`: never `npx sluice`, which outside a checkout fetches and runs whatever the public registry serves
 * under that name — from a cron line, every night, unattended.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { scaffold } from '../../src/cli/init/scaffold.js';
import { registeredTypes } from '../../src/pipeline/registry.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** `npx [flags] sluice <command>`, or `npm exec`/`npm x` of sluice without `--no` (which forbids a download). */
function fetchingLines(text: string): string[] {
  return text.split('\n').filter((line) => {
    if (/\bnpx\s+(?:-\S+\s+)*sluice\s+[a-z-]/.test(line)) return true;
    const exec = /\bnpm\s+(?:exec|x)\b(.*?)\bsluice\s+[a-z-]/.exec(line);
    return exec !== null && !/(^|\s)--no(\s|$)/.test(exec[1]!);
  });
}

function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && keep(e.name))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

describe('command lines name the installed binary, never `npx sluice`', () => {
  it('knows the lines it refuses', () => {
    expect(
      fetchingLines(
        [
          '30 2 * * * cd /srv/sluice && npx sluice run p.yaml',
          'npx -y sluice init reviews',
          'npm exec -- sluice run p.yaml',
          'npm exec --no -- sluice run p.yaml',
          '30 2 * * * cd /srv/sluice && sluice run p.yaml',
          'Never `npx sluice` outside a checkout',
          'npx tsx bench/run.ts',
        ].join('\n'),
      ),
    ).toEqual([
      '30 2 * * * cd /srv/sluice && npx sluice run p.yaml',
      'npx -y sluice init reviews',
      'npm exec -- sluice run p.yaml',
    ]);
  });

  it('in the README, the guides, the deploy recipes, the example pipelines and the Dockerfile', () => {
    const files = [
      'README.md',
      'ARCHITECTURE.md',
      'Dockerfile',
      ...filesUnder('docs', (n) => n.endsWith('.md')),
      ...filesUnder('deploy', () => true),
      ...filesUnder('pipelines', (n) => n.endsWith('.yaml')),
    ];
    expect(files).toEqual(expect.arrayContaining(['docs/guides/nightly-cron.md', 'deploy/airflow/sluice_dag.py']));
    const found = files.flatMap((f) =>
      fetchingLines(readFileSync(path.join(ROOT, f), 'utf8')).map((l) => `${f}: ${l}`),
    );
    expect(found).toEqual([]);
  });

  it('in what `sluice init` writes, for every source and sink', () => {
    for (const source of registeredTypes('source'))
      for (const sink of registeredTypes('sink'))
        for (const file of scaffold({ source, sink, name: `${source}_${sink}` })) {
          expect(fetchingLines(file.text), `${source} → ${sink}: ${file.path}`).toEqual([]);
          if (file.path.endsWith('.yaml')) expect(file.text).toContain(`sluice run ${source}_${sink}.yaml --show 5`);
        }
  });
});

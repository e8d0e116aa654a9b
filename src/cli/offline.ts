/**
 * The commands that read or change what runs left behind — history, state, outputs, dead letters, columns — call no
 * service, so an unset variable the service needs (the key, the address) must not stop them.
 */
import type { Logger } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { CliIo } from './io.js';

/**
 * The pipeline as `sluice run` would load it; failing that, with unset variables standing for the embedded emulator
 * (which every service setting accepts). Tried as set first, so a `${VAR:-default}` in `state_dir` resolves as the run
 * resolved it.
 */
export async function loadWithoutService(file: string, env: CliIo['env']): Promise<LoadedPipeline> {
  const { loadPipeline } = await import('../pipeline/load.js');
  return loadPipeline(file, env).catch(() =>
    loadPipeline(file, new Proxy(env, { get: (e, name: string) => e[name] ?? 'emulator' })),
  );
}

/** The pipeline's components, built with a service client that throws: these commands never reach for one. */
export async function componentsWithoutService(pipeline: LoadedPipeline, log: Logger, command: string) {
  const { buildComponents } = await import('../engine/components.js');
  const { SluiceError } = await import('../core/errors.js');
  const noService = (): never => {
    throw new SluiceError(`${command} does not call the service`, { hint: 'this is a bug: please report it' });
  };
  return buildComponents(pipeline.config, { log, baseDir: pipeline.baseDir, client: noService });
}

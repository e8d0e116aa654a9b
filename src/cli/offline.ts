/**
 * The commands that read or change what runs left behind — history, state, outputs, dead letters, columns — call no
 * service, so an unset variable the service needs (the key, the address) must not stop them.
 */
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

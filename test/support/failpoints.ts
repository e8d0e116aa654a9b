/**
 * A failpoint armed in this test's process (src/core/failpoints.ts `armFailpoint`), disarmed when the test ends
 * whatever happens — or earlier, by the function returned (before the run that recovers from the "crash").
 */
import { onTestFinished } from 'vitest';
import { armFailpoint, type FailpointAction, type FailpointName } from '../../src/core/failpoints.js';

export function armed(name: FailpointName, action: FailpointAction): () => void {
  const disarm = armFailpoint(name, action);
  onTestFinished(disarm);
  return disarm;
}

/** An action that throws `message` at the failpoint: a failure at that moment. */
export const failWith =
  (message: string): FailpointAction =>
  () => {
    throw new Error(message);
  };

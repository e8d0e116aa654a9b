import type { EmulatorContext } from '../context.js';
import type { Router } from '../router.js';

export function register(_router: Router, _ctx: EmulatorContext): void {
  // filled in by the zones routes work
}

/** Temporary placeholder (created by the pipeline/CLI helper): the sinks helper replaces this with the real list. */
import type { ComponentDef } from '../src/core/types.js';

export const sinkDefs: ComponentDef<'sink'>[] = [];

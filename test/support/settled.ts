/** Whether `p` has settled once everything already queued has run: a promise still waiting on something says false. */
export async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

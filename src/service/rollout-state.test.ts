import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RolloutStateStore } from './rollout-state.js';

test('a known id continues its rollout; an unknown or missing one starts a new one', () => {
  const store = new RolloutStateStore();
  const first = store.enter(undefined, 0);
  assert.equal(first.isNew, true);
  first.state.x = 1;
  const again = store.enter(first.id, 1);
  assert.deepEqual([again.isNew, again.step, again.state.x], [false, 2, 1]);
  const forged = store.enter('not-an-id', 2);
  assert.equal(forged.isNew, true);
  assert.notEqual(forged.id, 'not-an-id');
  assert.deepEqual(forged.state, {});
});

test('idle rollouts expire and the store never holds more than maxRollouts', () => {
  const store = new RolloutStateStore({ idleMs: 100, maxRollouts: 3 });
  const old = store.enter(undefined, 0);
  const kept = store.enter(undefined, 60);
  assert.equal(store.enter(old.id, 150).isNew, true, 'idle for 150 ms > 100 ms: expired');
  assert.equal(store.enter(kept.id, 151).isNew, false);
  for (let i = 0; i < 10; i++) store.enter(undefined, 152 + i);
  assert.equal(store.size, 3);
});

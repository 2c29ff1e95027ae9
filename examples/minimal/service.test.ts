import { test } from 'node:test';
import { assertAgentCheckPasses, DIST_EXAMPLES, spawnService } from '../../test/support/examples.js';

test("the README's minimal service passes gym agent check", async () => {
  const service = await spawnService(process.execPath, [`${DIST_EXAMPLES}minimal/service.js`], {
    env: { ...process.env, PORT: '0' },
  });
  try {
    await assertAgentCheckPasses(service.url);
  } finally {
    await service.close();
  }
});

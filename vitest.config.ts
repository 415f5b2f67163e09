import { basename } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files that take about a minute each (two cores, other files alongside), started first and in
 * this order, so that none is left running alone at the end. Without it vitest orders by its
 * results cache, which a fresh clone (CI) does not have and a run of one test (`-t`) skews.
 */
const LONG = [
  'kinds',
  'drift',
  'hostile-network',
  'tf-stop',
  'tf-resources',
  'site-browser',
  'bench',
  'actions',
  'crash',
  'shallow-state',
  'unit-files',
  'tutorial',
  'storage-failure',
  'terraform-real',
  'coordination',
  'remote',
];

class LongFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const at = LONG.indexOf(basename(f.moduleId, '.test.ts'));
      return at < 0 ? LONG.length : at;
    };
    // A stable sort: the other files keep vitest's order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Terraform asks checkpoint.hashicorp.com for news on every init; with no network here each
    // ask waits out its timeout (about 2.5 s of nothing per init, hundreds of inits a run).
    env: { CHECKPOINT_DISABLE: '1' },
    // Two cores on CI. The tests mostly run processes (node dist/cli.js, git, bash, terraform),
    // and many of them also wait (unit timeouts, grace periods, network bounds): with two files at
    // a time the cores sat idle about a seventh of the run; a third file fills those gaps.
    maxWorkers: 3,
    sequence: { sequencer: LongFirst },
  },
});

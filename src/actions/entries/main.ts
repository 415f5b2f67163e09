import * as core from '@actions/core';
import { SCHEMAS } from '../inputs.js';
import { runPlanAction } from '../plan-action.js';
import { runAction } from '../run-action.js';

// The root action: `command` selects reconcile, plan, recover, verify, lease-break or site.
const command = core.getInput('command') || 'reconcile';
if (command === 'plan') await runPlanAction();
// The site's pages are loaded only for command: site (a chunk of their own).
else if (command === 'site') await (await import('../site-action.js')).runSiteAction();
else if (command in SCHEMAS) await runAction(command as Exclude<keyof typeof SCHEMAS, 'plan'>);
else {
  const msg = `input command: ${JSON.stringify(command)} is not one of ${[...Object.keys(SCHEMAS), 'site'].join(', ')}`;
  core.error(msg, { title: 'NYL-INPUT' });
  core.setFailed(msg);
}

import * as core from '@actions/core';
import { SCHEMAS } from '../inputs.js';
import { runPlanAction } from '../plan-action.js';
import { runAction } from '../run-action.js';

// The root action: `command` selects reconcile, plan, recover, verify or lease-break.
const command = core.getInput('command') || 'reconcile';
if (command === 'plan') await runPlanAction();
else if (command in SCHEMAS) await runAction(command as Exclude<keyof typeof SCHEMAS, 'plan'>);
else {
  const msg = `input command: ${JSON.stringify(command)} is not one of ${Object.keys(SCHEMAS).join(', ')}`;
  core.error(msg, { title: 'NYL-INPUT' });
  core.setFailed(msg);
}

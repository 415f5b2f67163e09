import * as core from '@actions/core';
import { SCHEMAS } from '../inputs.js';
import { runAction } from '../run-action.js';

// The root action: `command` selects reconcile, recover, verify or lease-break.
const command = core.getInput('command') || 'reconcile';
if (command in SCHEMAS) await runAction(command as keyof typeof SCHEMAS);
else {
  const msg = `input command: ${JSON.stringify(command)} is not one of ${Object.keys(SCHEMAS).join(', ')}`;
  core.error(msg, { title: 'NYL-INPUT' });
  core.setFailed(msg);
}

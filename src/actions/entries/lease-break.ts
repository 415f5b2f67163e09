import { runAction } from '../run-action.js';

await runAction('lease-break');

import { runAction } from '../run-action.js';

await runAction('reconcile');

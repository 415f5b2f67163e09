import { runPlanAction } from '../plan-action.js';

await runPlanAction();

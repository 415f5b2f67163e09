import { runSiteAction } from '../site-action.js';

await runSiteAction();

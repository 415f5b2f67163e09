import { runPost } from '../run-action.js';

await runPost();

import { main } from './cli/main.js';

main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() }).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`error NYL-INTERNAL\n  ${(e as Error)?.message}\n`);
    process.exitCode = 1;
  },
);

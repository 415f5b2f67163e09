import { getState } from '@actions/core';

// Every job that used a Nyl action runs this post step, and almost always its main step finished:
// then there is nothing to do, and nothing but @actions/core is loaded. Only after a killed main
// step is the part that stops its tools and releases its lease loaded (a chunk of its own).
if (getState('main') !== 'finished' && getState('environment')) {
  const { runPost } = await import('../post-step.js');
  await runPost();
}

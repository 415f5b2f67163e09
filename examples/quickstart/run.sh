#!/usr/bin/env bash
# Reconciles the quick start in a throwaway local git repository (no remote needed), twice:
# the first run executes every unit, the second finds nothing to do.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
nyl="node $here/../../dist/cli.js"
work=$(mktemp -d "${TMPDIR:-/tmp}/nyl-quickstart.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -R "$here/nyl.yaml" "$here/scripts" "$work/"
cd "$work"
git init -q -b main
git -c user.name=quickstart -c user.email=quickstart@localhost add -A
git -c user.name=quickstart -c user.email=quickstart@localhost commit -q -m "quick start"
echo "\$ nyl reconcile -e dev --local"
$nyl reconcile -e dev --local
echo
echo "\$ nyl reconcile -e dev --local   # again: nothing changed"
$nyl reconcile -e dev --local
echo
echo "\$ nyl status -e dev --local"
$nyl status -e dev --local
echo
echo "\$ git log --format=%B -1 refs/nyl/dev/observed"
git log --format=%B -1 refs/nyl/dev/observed

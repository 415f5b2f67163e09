#!/usr/bin/env bash
# Pretends to create a database and reports where it is.
set -euo pipefail
echo "creating database for ${NYL_ENVIRONMENT} (unit ${NYL_UNIT}, run ${NYL_RUN})"
echo "url=postgres://db.${NYL_ENVIRONMENT}.internal:5432/app" >> "$NYL_OUTPUT"

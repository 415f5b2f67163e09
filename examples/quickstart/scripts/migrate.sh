#!/usr/bin/env bash
# Pretends to migrate the database at $1.
set -euo pipefail
echo "migrating $1"
echo "schemaVersion=42" >> "$NYL_OUTPUT"

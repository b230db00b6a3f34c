#!/usr/bin/env bash
# Run the controller graph against the simulated robot (or --real). Ctrl-C stops everything.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
set +u
# shellcheck source=tools/env.sh
source "$root/tools/env.sh"
set -u
exec python -m phil_bringup.launcher "$@"

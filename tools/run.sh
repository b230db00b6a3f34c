#!/usr/bin/env bash
# Run the controller graph against the simulated robot (or --real). Ctrl-C stops everything.
# Logs go to a timestamped run folder under runs/ unless --log-dir is given.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
set +u
# shellcheck source=tools/env.sh
source "$root/tools/env.sh"
set -u
args=("$@")
case " $* " in
  *" --log-dir "*) ;;
  *) args+=(--log-dir "$root/runs/run-$(date +%Y%m%d-%H%M%S)") ;;
esac
exec python -m phil_bringup.launcher "${args[@]}"

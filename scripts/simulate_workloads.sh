#!/usr/bin/env bash
# Five fixed-seed `seats simulate` runs that together drive every planner of the service: counted
# groups (a sell-out with duplicates), a sharded class (64 containers x 64 shards), the stadium
# map (best available to its sell-out), multi-line orders over a sharded pool, and repeated
# customers at a per-customer limit. A change to the service that is meant to keep its behaviour
# keeps their JSON byte for byte: `scripts/simulate_workloads.sh DIR` writes DIR/<name>.json
# (about 3 minutes in all here), and `diff -r BEFORE AFTER` compares two such directories. The
# JSON holds no wall-clock figure (the wall time goes to stderr, and only in table output).
set -euo pipefail
out=${1:?usage: scripts/simulate_workloads.sh OUTPUT_DIR [NAME ...]}
shift
cd "$(dirname "$0")/.."
seats=${SEATS:-.venv/bin/seats}
declare -A workloads=(
  [counted]="--requests 50000 --capacity 40000 --seats-per-request 2 --duplicates 0.05 --containers 20 --seed 1"
  [sharded]="--requests 50000 --containers 64 --shards 64 --seed 2"
  [stadium]="--seat-map examples/seat_maps/stadium.json --requests 30000 --seats-per-request 4 --event-pollers 7 --seed 3"
  [orders]="--order-lines 1-4 --pool-shards 4 --shards 4 --capacity 5000 --requests 20000 --seed 4"
  [repeats]="--requests 50000 --customers 5000 --max-per-customer 4 --seats-per-request 2 --duplicates 0.02 --containers 20 --seed 5"
)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(counted sharded stadium orders repeats)
mkdir -p "$out"
for name in "${names[@]}"; do
  args=${workloads[$name]:?unknown workload $name}
  echo "seats simulate $args" >&2
  # shellcheck disable=SC2086
  nice -n 10 "$seats" simulate $args --output json > "$out/$name.json"
done

#!/usr/bin/env bash
# plan_identity.sh — checks that a change to the planner leaves its plans as they were.
# A refactor or a speed-up of a pass should not move any plan; this plans a fixed set of 43
# (Checkmate graphs at 90/60/40%, resnet50 at its minimum and at 4.4 GB, layered DAGs at 0.8 of
# their peak, every example at 75/33/25% and with no budget, resnet18_64 at 24% and 20%) and
# prints one line per plan: its name and the MD5 of its JSON with solve_seconds and from_cache
# left out.
#   bash bench/plan_identity.sh BIN > before.txt; ...; bash bench/plan_identity.sh BIN > after.txt
#   diff before.txt after.txt    # nothing: the same plans
# Takes about 55 s. BENCHMARKS (default bench/data) holds the public graphs.
set -euo pipefail
bin=$(realpath "${1:?usage: plan_identity.sh MEMGRAD_BINARY}")
cd "$(dirname "$0")/.." # (paths relative to the checkout: errors name them, and are hashed too)
bm=${BENCHMARKS:-bench/data}
[ -d "$bm/checkmate" ] || { echo "plan_identity.sh: no $bm/checkmate (set BENCHMARKS)" >&2; exit 2; }

one() { # name, then memgrad plan's arguments; a refused budget: the MD5 of the error
    local name=$1; shift
    local out rc=0
    out=$("$bin" plan "$@" --format json --no-cache 2>&1) || rc=$?
    if [ $rc -eq 0 ]; then
        out=$(printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("solve_seconds",None); d.pop("from_cache",None); print(json.dumps(d,sort_keys=True))')
    fi
    echo "$name rc=$rc $(printf '%s' "$out" | md5sum | cut -d' ' -f1)"
}
field() { "$bin" plan "$@" --format json --no-cache | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['train']['peak_live_bytes'] if 'train' in d else d['peak_live_bytes'])"; }

for g in vgg16 unet mobilenet resnet50; do
    for b in 90 60 40; do one "$g@$b%" --graph "$bm/checkmate/$g.json" --budget "$b%"; done
done
one resnet50@min --graph "$bm/checkmate/resnet50.json" --budget 4315938816B
one resnet50@4.4GB --graph "$bm/checkmate/resnet50.json" --budget 4.4GB
for n in 100 250 500; do
    f=$bm/layered/layered_n$n.json
    peak=$(field --graph "$f")
    one "layered_n$n@0.8" --graph "$f" --budget "$((peak * 8 / 10))B"
done
for m in mlp cnn_fmnist mlp_deep transformer unet_small resnet18_64; do
    for b in 75 33 25; do one "$m@$b%" "examples/$m.mg" --budget "$b%"; done
    one "$m" "examples/$m.mg"
done
# resnet18_64 nearer its minimum, where the plans swing most (mg_sv_fit's `beat` moved 20% and
# 24% and none of the plans above)
for b in 24 20; do one "resnet18_64@$b%" examples/resnet18_64.mg --budget "$b%"; done

#!/bin/sh
# Regenerates samples/NAME.png, the heatmap of every sample problem samples/NAME.json
# (files named *.params.json hold parameters, not problems), with the built binary:
#   scripts/render_samples.sh build/app/attn
# Each problem is computed, then drawn titled with its name; exact zeros (what the
# problem's masks leave) are hatched. Deterministic: rerunning gives identical files.
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 PATH/TO/attn" >&2
    exit 2
fi
case "$1" in
    /*) attn="$1" ;;
    *) attn="$(pwd)/$1" ;;
esac
cd "$(dirname "$0")/.."

for problem in samples/*.json; do
    case "$problem" in
        *.params.json) continue ;;
    esac
    name=$(basename "$problem" .json)
    "$attn" compute "$problem" --quiet |
        "$attn" heatmap - --masked-zero --title "$name" -o "samples/$name.png"
    echo "samples/$name.png"
done

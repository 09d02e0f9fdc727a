#!/usr/bin/env bash
# Fetches the pinned uPlot release from npm into pkg/htmlreport/assets,
# where the HTML reports embed it (go:embed): a report is one offline file
# and never loads a chart library from a CDN when it is opened. npm checks
# the tarball against the registry's integrity hash; assets/PIN records the
# version and the files' sha256, which TestAssetsArePinned checks on every
# test run. To move to another release, change VERSION and run this script.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=1.6.32
out=pkg/htmlreport/assets
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$VERSION" >/dev/null && tar xzf "uplot-$VERSION.tgz")
cp "$tmp/package/dist/uPlot.iife.min.js" "$out/uPlot.iife.min.js"
cp "$tmp/package/dist/uPlot.min.css" "$out/uPlot.min.css"
cp "$tmp/package/LICENSE" "$out/uPlot.LICENSE"
{
  echo "uplot $VERSION"
  (cd "$out" && sha256sum uPlot.iife.min.js uPlot.min.css uPlot.LICENSE)
} > "$out/PIN"
cat "$out/PIN"

#!/usr/bin/env bash
# Regenerates the README's pictures: docs/status.png (the status page of a
# demo service) and docs/report.png (chash report plan), rendered by
# headless Chromium (Debian's chromium package; CHASH_CHROMIUM names
# another). The tool lives in the browser-test module, which has chromedp.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/adapters/browsertest"
go run ./cmd/screenshots -out "$root/docs"

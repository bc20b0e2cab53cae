#!/bin/sh
# Regenerates tests/pcaps/link/*.pcap from their sources, as listed in tests/pcaps/link/MANIFEST.
set -e
cd "$(dirname "$0")/../tests/pcaps/link"
grep -v '^#' MANIFEST | while read -r cap mode src; do
	[ -n "$cap" ] && ../../../build/pcapgen "$mode" "../$src" "$cap"
done

#!/usr/bin/env bash
# Fuzzes the HTTP API from its OpenAPI document with schemathesis against a running daemon:
# no answer may be a 5xx, and every answer must match the document (status, content type, schema).
# Usage: .ci/http-api-fuzz.sh SHOAL_BINARY SCHEMATHESIS_COMMAND
set -euo pipefail
shoal=$1
st=$2
root=$(mktemp -d)
daemon=""
cleanup() {
  if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  rm -rf "$root"
}
trap cleanup EXIT

"$shoal" init --data "$root/node" > /dev/null
key=$("$shoal" http-key --data "$root/node")
"$shoal" serve --data "$root/node" --listen 127.0.0.1:0 --http 127.0.0.1:0 --no-discovery > "$root/serve.log" 2>&1 &
daemon=$!
port=""
for _ in $(seq 1 600); do
  port=$(grep -o 'http=127\.0\.0\.1:[0-9]*' "$root/serve.log" | head -1 | cut -d: -f2 || true)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$root/serve.log"; echo "the daemon did not start"; exit 1; }

# Something to find: a zone with records, so generated requests also meet real data.
curl -sf -X POST -H "X-API-Key: $key" -H 'Content-Type: application/json' -d '{"zone": "notes"}' "127.0.0.1:$port/api/v1/zones" > /dev/null
for i in 1 2 3; do
  curl -sf -X PUT -H "X-API-Key: $key" -H 'Content-Type: application/json' \
    -d "{\"type\": \"Note\", \"fields\": {\"title\": \"note $i\", \"n\": $i}}" "127.0.0.1:$port/api/v1/zones/notes/records/n$i" > /dev/null
done
# A record with an asset: the document's example for the asset endpoint (notes/photo/image).
head -c 100000 /dev/urandom > "$root/photo.bin"
"$shoal" put notes photo --type Photo "image=@$root/photo.bin" --data "$root/node" > /dev/null
# A member of notes: the document's example for unsharing (notes, this device ID).
member=KW2GDVK-6XLONPK-GMWGM4F-LC24REG-IFAMPG5-AYQ4VRN-LEJM72S-GWDHCAT
curl -sf -X POST -H "X-API-Key: $key" -H 'Content-Type: application/json' -d "{\"device\": \"$member\"}" "127.0.0.1:$port/api/v1/devices" > /dev/null
curl -sf -X PUT -H "X-API-Key: $key" -H 'Content-Type: application/json' -d '{"role": "readOnly"}' "127.0.0.1:$port/api/v1/zones/notes/members/$member" > /dev/null

# The event stream never ends by design: it is left out. The hooks give the formats a pattern
# cannot state (device IDs with their check characters, `where` conditions) their generators.
PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}" SCHEMATHESIS_HOOKS=http_api_hooks \
$st run "http://127.0.0.1:$port/openapi.json" \
  --header "X-API-Key: $key" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --exclude-path /api/v1/events \
  --max-examples "${SHOAL_FUZZ_EXAMPLES:-40}" \
  --request-timeout 90 \
  --seed 1

# The daemon survived it.
curl -sf -H "X-API-Key: $key" "127.0.0.1:$port/api/v1/status" > /dev/null
echo "schemathesis: the daemon answered within its document and is still up"

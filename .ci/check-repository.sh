#!/usr/bin/env bash
# Guards the repository against runaway files: a tracked file over 2 MiB (unless listed in
# .ci/large-files) or a Markdown file that repeats one paragraph more than 3 times fails the run.
#
#   .ci/check-repository.sh              check every file git tracks
#   .ci/check-repository.sh FILE...      check these files only
#   .ci/check-repository.sh --self-test  show that both checks fail on bad input
set -euo pipefail
cd "$(dirname "$0")/.."

max_bytes=$((2 * 1024 * 1024))
max_repeats=3      # a paragraph may appear this many times in one file
min_paragraph=80   # shorter paragraphs (table rules, "```", one-word lines) may repeat freely

# Paths allowed to exceed max_bytes, one per line, '#' comments (none today).
allowed() {
  [ -f .ci/large-files ] || return 1
  grep -v '^#' .ci/large-files | grep -qxF -- "$1"
}

# Prints "COUNT<TAB>first line" for every paragraph of FILE that repeats too often.
repeated_paragraphs() {
  awk -v max="$max_repeats" -v min="$min_paragraph" '
    BEGIN { RS = "" }
    {
      p = $0
      gsub(/[ \t]+/, " ", p)
      if (length(p) < min) next
      if (++count[p] == max + 1) order[++n] = p
    }
    END {
      for (i = 1; i <= n && i <= 5; i++) {
        line = order[i]; sub(/\n.*/, "", line)
        printf "%d\t%s\n", count[order[i]], substr(line, 1, 100)
      }
      if (n > 5) printf "-\t(and %d more repeated paragraphs)\n", n - 5
    }' "$1"
}

check() {
  local failed=0 file size repeats
  for file in "$@"; do
    [ -f "$file" ] || continue
    size=$(stat -c %s -- "$file")
    if [ "$size" -gt "$max_bytes" ] && ! allowed "$file"; then
      echo "check-repository: $file is $size bytes, over the $max_bytes-byte limit for a tracked file;" \
        "shrink it, or list it in .ci/large-files if it must be that large" >&2
      failed=1
    fi
    case "$file" in
      *.md)
        repeats=$(repeated_paragraphs "$file")
        if [ -n "$repeats" ]; then
          while IFS=$'\t' read -r n first; do
            [ "$n" = - ] && { echo "check-repository: $file: $first" >&2; continue; }
            echo "check-repository: $file repeats a paragraph $n times (at most $max_repeats allowed):" \
              "\"$first\"; a scripted edit probably ran away" >&2
          done <<< "$repeats"
          failed=1
        fi
        ;;
    esac
  done
  return "$failed"
}

self_test() {
  local dir
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  head -c $((max_bytes + 1)) /dev/zero > "$dir/big.bin"
  for _ in 1 2 3 4; do
    printf 'The same paragraph, long enough to count as prose rather than a table rule or a fence.\nIt goes on.\n\n'
  done > "$dir/repeated.md"
  for _ in 1 2 3; do
    printf 'A paragraph that appears three times, which is allowed: an example repeated on purpose.\n\n'
  done > "$dir/fine.md"
  if check "$dir/big.bin" 2>/dev/null; then echo "self-test: a file over $max_bytes bytes passed" >&2; return 1; fi
  if check "$dir/repeated.md" 2>/dev/null; then echo "self-test: a paragraph repeated 4 times passed" >&2; return 1; fi
  if ! check "$dir/fine.md"; then echo "self-test: a paragraph repeated 3 times failed" >&2; return 1; fi
  echo "check-repository: self-test ok"
}

if [ "${1:-}" = "--self-test" ]; then
  self_test
elif [ $# -gt 0 ]; then
  check "$@"
else
  mapfile -d '' files < <(git ls-files -z)
  check "${files[@]}"
  echo "check-repository: ${#files[@]} tracked files ok"
fi

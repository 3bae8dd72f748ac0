#!/usr/bin/env bash
# Comments in Sources say what the code does and why; its history (the issues and work sessions that led to it, the
# measurements taken on the way) lives in git and in docs/benchmarks.md, which a comment may name. Fails, naming
# file:line, on a `//` comment in Sources/**/*.swift (generated protobuf code and the embedded dashboard aside) that
# cites an issue, a throughput figure, a share of a process's time, a measurement's figures, a before → after figure
# or a work session. Usage: check-comments.sh [repository root]   (default: the current directory)
set -euo pipefail
root=${1:-.}
if [ ! -d "$root/Sources" ]; then
  echo "comments: no Sources folder in $root" >&2
  exit 2
fi

# Each check: a name, then an extended regular expression (GNU grep, case-insensitive) matched in what follows `//`.
number='[0-9][0-9,.]*([–-][0-9][0-9,.]*)?'
unit='(%|µs|ms|MB|GB|KB|B/row|rows|jobs|saves|ticks)'
checks=(
  'an issue'
  '\bissues? #?[0-9]+\b|(^|[[:space:](,;])#[0-9]+\b'
  'a throughput figure'
  "\b${number}( ?[kM])? ?(rows|jobs|saves|events|commits)(/s\b| (per|a) second\b)"
  "a share of a process's time"
  "\b[0-9]+(\.[0-9]+)? ?% of (the |an? |its |their )?(import(ing)? )?(writer|workers?|coordinator|merge|process|CPU|samples|time)\b"
  "a measurement's figures"
  "\b(measured|profiled|alternated)\b[^.;]*[^[:alnum:].,]${number} ?${unit}"
  'a before → after figure'
  "\b${number} ?${unit}? → ${number} ?${unit}"
  'a work session'
  "\b(this|last|previous|earlier|next|same|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|[0-9]+(st|nd|rd|th))( work)? session\b|\bsession [0-9]+\b|\bwork[- ]?log\b"
)

files=()
while IFS= read -r -d '' file; do
  files+=("$file")
done < <(cd "$root" && find Sources -name '*.swift' ! -name 'tributary.pb.swift' -print0 | sort -z)

found=0
for ((index = 0; index < ${#checks[@]}; index += 2)); do
  name=${checks[index]}
  # The comment starts at the first `//` that is not part of a URL's `://`.
  hits=$(cd "$root" && grep -HniE -- "(^|[^:])//.*(${checks[index + 1]})" "${files[@]}" || true)
  if [ -n "$hits" ]; then
    while IFS= read -r hit; do
      file_line=$(cut -d: -f1,2 <<<"$hit")
      text=$(cut -d: -f3- <<<"$hit" | sed -E 's/^[[:space:]]+//')
      echo "$file_line: comment cites $name: $text" >&2
      found=$((found + 1))
    done <<<"$hits"
  fi
done

if [ "$found" -gt 0 ]; then
  echo "comments: $found comment line(s) tell history; say what the code does and why (figures belong in" \
    "docs/benchmarks.md, which a comment may name, e.g. \"see docs/benchmarks.md, 'Import'\")" >&2
  exit 1
fi
echo "comments: ${#files[@]} Swift files in Sources, no comment cites an issue, a figure or a work session"

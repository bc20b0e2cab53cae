#!/bin/sh
# Emits a C file defining `const char NAME[]` with the contents of FILE... (a schema: its
# tables, then the views), concatenated.
name=$1
shift
echo "/* generated from $* by tools/embed.sh: do not edit */"
printf 'const char %s[] =\n' "$name"
cat "$@" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$/\\n"/'
echo ";"

#!/bin/sh
# Emits a C file defining `const char NAME[]` with the contents of FILE (the schema).
name=$1 file=$2
echo "/* generated from $file by tools/embed.sh: do not edit */"
printf 'const char %s[] =\n' "$name"
sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$/\\n"/' "$file"
echo ";"

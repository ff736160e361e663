#!/usr/bin/env bash
# The libraries export their public API only: every symbol in their dynamic symbol tables is in
# namespace mneme (its functions, vtables, typeinfo), and none belongs to a class or struct declared
# in a private header (*_p.h).
#
#   tests/package/check_symbols.sh LIBDIR SOURCE_DIR
set -euo pipefail
libdir=$1
src=$2

private=$(find "$src"/core "$src"/memory "$src"/runtime "$src"/flows "$src"/models -name '*_p.h' -exec cat {} + \
  | sed -n -E 's/^(class|struct) ([A-Z][A-Za-z0-9_]*)( final)?( :.*)?$/\2/p' | sort -u)
status=0
for lib in core memory runtime flows models; do
  so=$libdir/libmneme_$lib.so
  symbols=$(nm -D --defined-only -C "$so" | cut -d' ' -f3-)
  count=$(printf '%s\n' "$symbols" | grep -c .)
  outside=$(printf '%s\n' "$symbols" \
    | grep -v -E '^((typeinfo( name)? for|vtable for|(non-)?virtual thunk to) )?mneme::' || true)
  if [ -n "$outside" ]; then
    echo "libmneme_$lib.so exports symbols outside namespace mneme:" >&2
    printf '  %s\n' "$outside" | head -n 20 >&2
    status=1
  fi
  for cls in $private; do
    if printf '%s\n' "$symbols" | grep -q -E "mneme::$cls(::|\$| )"; then
      echo "libmneme_$lib.so exports the private class $cls" >&2
      status=1
    fi
  done
  echo "libmneme_$lib.so: $count exported symbols"
done
exit $status

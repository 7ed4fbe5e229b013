#!/bin/sh
# per-rank.sh DIR0 DIR1 -- CMD...: runs CMD in DIR0 on MPI rank 0 and in DIR1
# on the other ranks, as if they were on hosts with different files.
# per-rank.sh args "A" "B" -- CMD...: runs CMD with the extra arguments A
# (split at spaces) on rank 0 and B on the other ranks.
rank="${OMPI_COMM_WORLD_RANK:-0}"
if [ "$1" = "args" ]; then
  extra0="$2"; extra1="$3"; shift 4
  if [ "$rank" = 0 ]; then exec "$@" $extra0; else exec "$@" $extra1; fi
fi
dir0="$1"; dir1="$2"; shift 3
if [ "$rank" = 0 ]; then cd "$dir0"; else cd "$dir1"; fi && exec "$@"

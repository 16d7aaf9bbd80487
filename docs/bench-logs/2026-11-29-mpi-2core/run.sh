#!/usr/bin/env bash
# The MPI scaling runs of docs/performance.md, "MPI ranks", on this machine: best of 10.
set -euo pipefail
B=${1:-build}/mpi/mpi_scaling
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { mpirun --oversubscribe --bind-to none -np "$@" --repeat 10; }
uptime
run 1 $B --mode strong --boxes 250000 --header yes
run 2 $B --mode strong --boxes 250000
run 2 $B --mode strong --boxes 250000 --placement random
run 1 $B --mode strong --boxes 250000 --method lbvh
run 2 $B --mode strong --boxes 250000 --method lbvh
run 2 $B --mode strong --boxes 250000 --method lbvh --placement random
run 1 $B --mode weak --boxes 125000
run 2 $B --mode weak --boxes 125000
run 1 $B --mode weak --boxes 125000 --method lbvh
run 2 $B --mode weak --boxes 125000 --method lbvh
uptime

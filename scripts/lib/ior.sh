# Shared by scripts/ior-bench and scripts/ior-detect (sourced, not run).
#
# find_ior SCRATCH: prints the path of an IOR binary: $IOR if set, ior on
# PATH, else IOR built from source in SCRATCH (from IOR_SRC=DIR, or cloned
# from IOR_GIT at IOR_REF).
find_ior() {
  local scratch=$1 src
  if [ -n "${IOR:-}" ]; then echo "$IOR"; return; fi
  if command -v ior >/dev/null; then command -v ior; return; fi
  src=${IOR_SRC:-}
  if [ -z "$src" ]; then
    echo "== cloning IOR ${IOR_REF:-4.0.0} from ${IOR_GIT:-https://github.com/hpc/ior}" >&2
    git clone -q "${IOR_GIT:-https://github.com/hpc/ior}" "$scratch/ior-src" >&2 ||
      { echo "cloning IOR failed: set IOR=PATH to an ior binary or IOR_SRC=DIR to its source" >&2; return 1; }
    git -C "$scratch/ior-src" checkout -q "${IOR_REF:-4.0.0}" 2>/dev/null || true
    src=$scratch/ior-src
  fi
  echo "== building IOR in $scratch/ior (log: $scratch/ior-build.log)" >&2
  cp -r "$src" "$scratch/ior"
  (cd "$scratch/ior" && ./bootstrap && ./configure && make -j"$(nproc)") >"$scratch/ior-build.log" 2>&1 ||
    { tail -20 "$scratch/ior-build.log" >&2; echo "IOR build failed" >&2; return 1; }
  echo "$scratch/ior/src/ior"
}

# wait_for CMD...: retry CMD for 10 s.
wait_for() {
  for _ in $(seq 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timed out waiting for: $*" >&2
  return 1
}

# need_tools: MPICH, fuse3 and root, or a clear message.
need_tools() {
  local t
  for t in mpirun fusermount3; do
    command -v $t >/dev/null || { echo "$t not found (apt-get install mpich fuse3)" >&2; return 1; }
  done
  [ "$(id -u)" = 0 ] || { echo "run as root (the mount is made directly)" >&2; return 1; }
}

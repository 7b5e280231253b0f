# Sourced by the scripts: one persistent target directory, so RocksDB (about 20 minutes of C++ on
# two cores) is compiled once per machine rather than once per clone.
# Everything builds in the release profile: tests, benches and binaries share one RocksDB build.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/augur/target}"
for d in "$HOME/.cargo/bin" /usr/local/cargo/bin; do
  if [ -d "$d" ]; then
    case ":$PATH:" in
      *":$d:"*) ;;
      *) export PATH="$d:$PATH" ;;
    esac
  fi
done
# A prebuilt RocksDB 11.8.1 (a local build cache, put there by the workplace's warm-rocksdb tool)
# replaces the C++ compile, but only when Cargo.lock pins the librocksdb-sys that matches it
# exactly; otherwise RocksDB compiles from source as usual.
_augur_prebuilt="$HOME/.cache/augur/prebuilt/rocksdb-11.8.1"
_augur_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -f "$_augur_prebuilt/librocksdb.a" ] &&
  grep -A1 '^name = "librocksdb-sys"$' "$_augur_root/Cargo.lock" 2>/dev/null |
  grep -q '^version = "0.19.0+11.8.1"$'; then
  export ROCKSDB_LIB_DIR="$_augur_prebuilt" ROCKSDB_STATIC=1
fi
unset _augur_prebuilt _augur_root
true

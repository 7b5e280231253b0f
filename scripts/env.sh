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
true

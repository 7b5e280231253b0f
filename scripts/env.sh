# Sourced by the scripts: one persistent target directory, so RocksDB (about 20 minutes of C++ on
# two cores) is compiled once per machine rather than once per clone.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/augur/target}"
for d in "$HOME/.cargo/bin" /usr/local/cargo/bin; do
  case ":$PATH:" in *":$d:"*) ;; *) [ -d "$d" ] && export PATH="$d:$PATH" ;; esac
done
# Everything builds in the release profile: tests, benches and binaries share one RocksDB build.
